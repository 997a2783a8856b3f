// The window's session: its folded state, and the actions that drive a run over IPC.
import * as ipc from '../ipc';
import type { AgentEvent, ApprovalPolicy, Decision, SavedCheck, StallAnswer, WindowUpdate } from '../types';
import { errorNotice, type NoticeKind } from './errors';
import { applyEvent } from './reduce';
import { initialRunState, type RunState } from './state';

const IPC_ERROR_KINDS: Partial<Record<ipc.IpcErrorKind, NoticeKind>> = {
  no_key: 'no_key',
  keyring_unavailable: 'no_key',
};

export class RunStore {
  state: RunState = $state(initialRunState());
  mode: ApprovalPolicy = $state('ask');
  /** True between a decision being sent and the core confirming it. */
  deciding = $state(false);
  /** True between a stall answer being sent and the core confirming it. */
  answering = $state(false);
  /**
   * The session's check: the saved one, or for a new chat the one its first message sends
   * (the shell saves it with the new session).
   */
  check: SavedCheck | null = $state(null);
  /** Where the session's runs work: saved, or held for a new chat as `check` is. */
  desktop: ipc.DesktopChoice = $state({ ...ipc.DEFAULT_DESKTOP });

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
    if (event.type === 'stall_answered' || event.type === 'done') this.answering = false;
  }

  /** What the shell sends of a run: its events, and notices that are not part of it. */
  receive(update: WindowUpdate): void {
    if (update.type === 'notice') this.state.notices.push(update.message);
    else this.apply(update);
  }

  async send(text: string, attachments: ipc.AttachmentRef[]): Promise<void> {
    if (this.busy) return;
    this.state.phase = 'running';
    this.state.error = null;
    this.state.notices = [];
    try {
      const check = this.state.sessionId ? null : this.check;
      const desktop = this.state.sessionId ? null : this.desktop;
      const sessionId = await ipc.sendMessage(
        this.state.sessionId,
        text,
        attachments,
        (update) => this.receive(update),
        check,
        desktop,
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

  /** Answers the stall question the person was shown; nothing when none is open. */
  async answerStall(answer: Exclude<StallAnswer, { answer: 'no_one' }>): Promise<void> {
    if (!this.state.stall || this.answering) return;
    this.answering = true;
    try {
      await ipc.answerStall(answer);
    } catch (error) {
      this.answering = false;
      this.state.error = errorNotice(ipc.toIpcError(error).message);
    }
  }

  /**
   * Sets the session's check: saved at once for a stored session (rejects with the shell's
   * `IpcError` when it is refused), held for a new chat until its first message.
   */
  async saveCheck(check: SavedCheck | null): Promise<void> {
    if (this.state.sessionId) await ipc.setSessionCheck(this.state.sessionId, check);
    this.check = check;
  }

  /** Sets where the session's runs work: saved at once for a stored session. */
  async saveDesktop(choice: ipc.DesktopChoice): Promise<void> {
    if (this.state.sessionId) await ipc.setSessionDesktop(this.state.sessionId, choice);
    this.desktop = choice;
  }

  async stop(): Promise<void> {
    if (!this.busy) return;
    this.state.phase = 'stopping';
    await ipc.stop();
  }

  async setMode(mode: ApprovalPolicy): Promise<void> {
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
    const [loaded, check, desktop] = await Promise.all([
      ipc.loadSession(sessionId),
      ipc.getSessionCheck(sessionId).catch(() => null),
      ipc.getSessionDesktop(sessionId).catch(() => ({ ...ipc.DEFAULT_DESKTOP })),
    ]);
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
    this.check = check;
    this.desktop = desktop ?? { ...ipc.DEFAULT_DESKTOP };
  }

  newSession(): void {
    if (this.busy) return;
    this.state = initialRunState();
    this.check = null;
    this.desktop = { ...ipc.DEFAULT_DESKTOP };
  }
}

export const run = new RunStore();
