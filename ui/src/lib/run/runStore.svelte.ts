// The window's session: its folded state, and the actions that drive a run over IPC.
import * as ipc from '../ipc';
import type { AgentEvent, ApprovalMode, Decision } from '../types';
import { errorNotice, type ErrorKind } from './errors';
import { applyEvent } from './reduce';
import { initialRunState, type RunState } from './state';

const IPC_ERROR_KINDS: Partial<Record<ipc.IpcErrorKind, ErrorKind>> = {
  no_key: 'no_key',
  keyring_unavailable: 'no_key',
};

export class RunStore {
  state: RunState = $state(initialRunState());
  mode: ApprovalMode = $state('ask');
  /** True between a decision being sent and the core confirming it. */
  deciding = $state(false);

  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  get busy(): boolean {
    return this.state.phase === 'running' || this.state.phase === 'stopping';
  }

  apply(event: AgentEvent): void {
    applyEvent(this.state, event, this.#now());
    if (event.type === 'approval_decided' || event.type === 'done') this.deciding = false;
  }

  async send(text: string, attachments: ipc.AttachmentRef[]): Promise<void> {
    if (this.busy) return;
    this.state.phase = 'running';
    this.state.error = null;
    try {
      const sessionId = await ipc.sendMessage(this.state.sessionId, text, attachments, (event) =>
        this.apply(event),
      );
      this.state.sessionId = sessionId;
    } catch (error) {
      const { kind, message } = ipc.toIpcError(error);
      this.state.phase = 'finished';
      this.state.outcome = 'error';
      this.state.error = errorNotice(message, IPC_ERROR_KINDS[kind]);
    }
  }

  /**
   * Answers the call `toolUseId`, the one the person was shown; nothing if another call is
   * pending by now (the shell refuses an id that is not pending, too).
   */
  async decide(toolUseId: string, decision: Decision): Promise<void> {
    const pending = this.state.pending;
    if (!pending || pending.tool_use_id !== toolUseId || this.deciding) return;
    this.deciding = true;
    try {
      await ipc.approve(pending.tool_use_id, decision);
    } catch (error) {
      this.deciding = false;
      // Declined in the shell's own dialog ("always allow" for bash): the card stays.
      const { kind, message } = ipc.toIpcError(error);
      if (kind !== 'declined') this.state.error = errorNotice(message);
    }
  }

  async stop(): Promise<void> {
    if (!this.busy) return;
    this.state.phase = 'stopping';
    await ipc.stop();
  }

  async setMode(mode: ApprovalMode): Promise<void> {
    const previous = this.mode;
    this.mode = mode;
    try {
      await ipc.setApprovalMode(mode);
    } catch (error) {
      this.mode = previous;
      // Auto declined in the shell's own dialog: the switch simply goes back.
      const { kind, message } = ipc.toIpcError(error);
      if (kind !== 'declined') this.state.error = errorNotice(message);
    }
  }

  /** Rebuilds a stored session: its events replayed, or its messages when it has no events. */
  async open(sessionId: string): Promise<void> {
    if (this.busy) return;
    const loaded = await ipc.loadSession(sessionId);
    const state = initialRunState();
    const events: AgentEvent[] = loaded.events.some((e) => e.type === 'message')
      ? loaded.events
      : [...loaded.messages.map((message) => ({ type: 'message', message }) as const), ...loaded.events];
    for (const event of events) applyEvent(state, event, this.#now());
    state.sessionId = loaded.session.id;
    // The store's totals are the session's, whatever its stored events hold.
    if (loaded.session.usage) state.usage = loaded.session.usage;
    state.cost = loaded.session.cost_usd ?? state.cost;
    if (state.phase !== 'idle') state.phase = 'finished';
    state.pending = null;
    state.retry = null;
    this.state = state;
  }

  newSession(): void {
    if (this.busy) return;
    this.state = initialRunState();
  }
}

export const run = new RunStore();
