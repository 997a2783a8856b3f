// Folds AgentEvents into RunState, in place (so that a Svelte `$state` proxy updates only
// what changed). The same fold rebuilds a reopened session from its stored events.
import type { AgentEvent, ContentBlock, ImageRef, ImageSource, Message, ToolStatus } from '../types';
import { errorNotice, noticeKind } from './errors';
import {
  addCost,
  addUsage,
  initialRunState,
  type ChatBlock,
  type RunState,
  type TimelineEntry,
} from './state';

export function applyEvent(state: RunState, event: AgentEvent, now: number): void {
  if (event.type !== 'retrying') state.retry = null;
  switch (event.type) {
    case 'started':
      state.sessionId = event.session_id;
      state.provider = event.provider;
      state.model = event.model;
      state.phase = 'running';
      state.outcome = null;
      state.error = null;
      state.forecast = null;
      state.summarized = null;
      state.verification = null;
      state.stall = null;
      state.usageBase = { ...state.usage };
      state.costBase = state.cost;
      state.notes = event.notes ?? [];
      state.priceSource = event.price_source ?? null;
      // Said before the run starts (a model past its retirement date).
      state.notices.push(...(event.warnings ?? []));
      return;
    case 'text_delta':
      state.draft += event.text;
      return;
    case 'thinking_delta':
      state.thinking += event.text;
      return;
    case 'message':
      applyMessage(state, event.message);
      return;
    case 'tool_call':
      state.timeline.push({
        id: event.id,
        name: event.name,
        input: event.input,
        plan: null,
        decision: null,
        result: null,
        phase: 'proposed',
        stall: null,
      });
      return;
    case 'approval_needed': {
      const { tool_use_id, kind, read_only, summary, detail, target } = event.request;
      const entry = findEntry(state, tool_use_id);
      if (entry) {
        entry.plan = { kind, read_only, summary, detail, target };
        entry.phase = 'awaiting_approval';
      }
      state.pending = event.request;
      return;
    }
    case 'approval_decided': {
      const { id, by, client } = event;
      const decision =
        event.decision === 'deny'
          ? { decision: event.decision, reason: event.reason, by, client }
          : { decision: event.decision, by, client };
      const entry = findEntry(state, id);
      if (entry) {
        entry.decision = decision;
        entry.phase = decision.decision === 'deny' ? 'denied' : 'running';
      }
      if (state.pending?.tool_use_id === id) state.pending = null;
      return;
    }
    case 'tool_result': {
      const entry = findEntry(state, event.id);
      if (entry) {
        entry.result = {
          isError: event.is_error,
          text: event.text,
          images: event.images,
          durationMs: event.duration_ms,
          changed: event.changed ?? null,
        };
        entry.phase = resultPhase(entry, event.status ?? (event.is_error ? 'error' : 'ok'));
      }
      if (state.pending?.tool_use_id === event.id) state.pending = null;
      const last = event.images.at(-1);
      if (last) state.screen = last;
      return;
    }
    case 'retrying':
      state.retry = {
        attempt: event.attempt,
        error: event.error,
        kind: noticeKind(event.kind),
        at: now + event.delay_ms,
      };
      return;
    case 'usage':
      state.usage = addUsage(state.usageBase, event.total);
      state.cost = addCost(state.costBase, event.total_cost_usd);
      return;
    case 'context_summarized':
      state.summarized = { upto: event.upto, tokensBefore: event.tokens_before, tokensAfter: event.tokens_after };
      return;
    case 'plan_updated':
      state.plan = event.steps;
      state.planChanges = event.changes;
      state.replanned = event.replanned;
      return;
    case 'cost_forecast':
      state.forecast = {
        costUsd: event.forecast_cost_usd,
        maxCostUsd: event.max_cost_usd,
        tokens: event.forecast_tokens,
        maxTokens: event.max_tokens,
        maxTurns: event.max_turns,
      };
      return;
    case 'stall_detected': {
      const entry = findEntry(state, event.steps.at(-1) ?? '');
      if (entry) entry.stall = { pattern: event.pattern, step: event.step, message: event.message };
      state.stall =
        event.step === 'ask' ? { pattern: event.pattern, message: event.message, steps: event.steps } : null;
      return;
    }
    case 'suspected_injection':
      state.notices.push(`Suspected prompt injection (${event.pattern}) in ${event.origin}: ${event.text}`);
      return;
    case 'stall_answered':
      state.stall = null;
      return;
    case 'verification':
      state.verification = {
        outcome: event.outcome,
        check: event.check,
        exit_code: event.exit_code,
        output: event.output,
        error: event.error,
        retried: event.retried,
      };
      return;
    case 'error':
      state.error = errorNotice(event.message, noticeKind(event.kind));
      return;
    case 'child_event': {
      if (!state.children.some((c) => c.task === event.task)) {
        state.children.push({ task: event.task, run: initialRunState() });
      }
      // Found again: the pushed object is wrapped when the state is a Svelte proxy.
      const child = state.children.find((c) => c.task === event.task);
      if (child) applyEvent(child.run, event.event, now);
      return;
    }
    case 'done':
      state.sessionId = event.session_id;
      state.phase = 'finished';
      state.outcome = event.status;
      state.turns += event.turns;
      state.usage = addUsage(state.usageBase, event.usage);
      state.cost = addCost(state.costBase, event.cost_usd);
      state.pending = null;
      state.stall = null;
      state.thinking = '';
      keepInterruptedDraft(state);
      return;
  }
}

function findEntry(state: RunState, id: string): TimelineEntry | undefined {
  return state.timeline.find((entry) => entry.id === id);
}

/** Events stored before statuses existed have only `is_error`: a stop there reads as failed. */
function resultPhase(entry: TimelineEntry, status: ToolStatus): TimelineEntry['phase'] {
  if (entry.phase === 'denied') return 'denied';
  switch (status) {
    case 'ok':
      return 'done';
    case 'cancelled':
      return 'cancelled';
    case 'denied':
      return 'denied';
    case 'error':
      return 'failed';
  }
}

/** A message appended to the history. A user message right after a user message is the core
 * merging new content into it (the rule is history::merges_into), so it replaces that one. */
function applyMessage(state: RunState, message: Message): void {
  const merged = message.role === 'user' && state.lastRole === 'user';
  const historyIndex = merged ? state.historyLength - 1 : state.historyLength;
  if (!merged) state.historyLength += 1;
  state.lastRole = message.role;

  if (message.role === 'assistant') {
    state.draft = '';
    state.thinking = '';
  }
  for (const block of message.content) {
    const image = blockImage(block);
    if (image) state.screen = image;
  }

  const blocks = message.content.flatMap(chatBlocks);
  const existing = state.chat.findIndex((m) => m.historyIndex === historyIndex);
  if (blocks.length === 0) {
    if (existing >= 0) state.chat.splice(existing, 1);
    return;
  }
  const chatMessage = { key: state.nextKey++, role: message.role, blocks, historyIndex };
  if (existing >= 0) state.chat[existing] = chatMessage;
  else state.chat.push(chatMessage);
}

function chatBlocks(block: ContentBlock): ChatBlock[] {
  switch (block.type) {
    case 'text':
      return block.text.trim() ? [{ kind: 'text', text: block.text }] : [];
    case 'image': {
      const image = imageRef(block.source);
      return image ? [{ kind: 'image', image }] : [];
    }
    case 'tool_use':
      return [{ kind: 'tool', id: block.id, name: block.name }];
    case 'thinking':
      return [{ kind: 'thinking', text: block.thinking }];
    case 'tool_result':
    case 'redacted_thinking':
    case 'openai_item':
      return [];
  }
}

function blockImage(block: ContentBlock): ImageRef | null {
  return block.type === 'image' ? imageRef(block.source) : null;
}

/** Only referenced images can be shown: the shell strips pixels out of events. */
function imageRef(source: ImageSource): ImageRef | null {
  if (source.type !== 'ref') return null;
  return { sha256: source.sha256, media_type: source.media_type, bytes: source.bytes };
}

/** Text that streamed in but never became a message (an error cut it off) stays visible. */
function keepInterruptedDraft(state: RunState): void {
  if (!state.draft) return;
  state.chat.push({
    key: state.nextKey++,
    role: 'assistant',
    blocks: [{ kind: 'text', text: state.draft }],
    historyIndex: null,
  });
  state.draft = '';
}
