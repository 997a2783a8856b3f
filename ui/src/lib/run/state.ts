// The state of the window's current session, as folded from its AgentEvents.
import type {
  ActionPlan,
  ApprovalRequest,
  DecidedBy,
  Decision,
  ImageRef,
  NoteRef,
  PlanChange,
  PlanStep,
  PriceSource,
  Role,
  RunStatus,
  StallPattern,
  StallStep,
  Usage,
  Verification,
} from '../types';
import type { ErrorNotice, NoticeKind } from './errors';

export type ChatBlock =
  | { kind: 'text'; text: string }
  | { kind: 'image'; image: ImageRef }
  | { kind: 'tool'; id: string; name: string }
  | { kind: 'thinking'; text: string };

export interface ChatMessage {
  /** Stable key for rendering. */
  key: number;
  role: Role;
  blocks: ChatBlock[];
  /** Index in the session's history; null for text a stop or an error cut off unsaved. */
  historyIndex: number | null;
}

export type ActionPhase =
  | 'proposed'
  | 'awaiting_approval'
  | 'running'
  | 'done'
  | 'failed'
  | 'denied'
  | 'cancelled';

export interface ActionResult {
  isError: boolean;
  text: string;
  images: ImageRef[];
  durationMs: number;
  /** Computer actions: false when nothing on the screen changed; null for other tools. */
  changed: boolean | null;
}

/** What the stall breaker said about a step (the last of the steps that showed it). */
export interface StallMark {
  pattern: StallPattern;
  step: StallStep;
  message: string;
}

/** The stall breaker's question to the person, open until it is answered or the run ends. */
export interface StallQuestion {
  pattern: StallPattern;
  message: string;
  /** The tool calls that showed the pattern. */
  steps: string[];
}

/** The run's pace would pass its budget at the turn limit. */
export interface CostForecast {
  costUsd: number | null;
  maxCostUsd: number | null;
  tokens: number;
  maxTokens: number | null;
  maxTurns: number;
}

/** The `context_summarized` event: `upto` messages now go as a summary. */
export interface Summarized {
  upto: number;
  tokensBefore: number;
  tokensAfter: number;
}

export interface TimelineEntry {
  id: string;
  name: string;
  input: unknown;
  /** Known when the action was put to the person. */
  plan: ActionPlan | null;
  decision: (Decision & { by: DecidedBy; client?: string }) | null;
  result: ActionResult | null;
  phase: ActionPhase;
  stall: StallMark | null;
}

export interface RetryNotice {
  attempt: number;
  error: string;
  kind: NoticeKind;
  /** When the next attempt is sent, in epoch milliseconds. */
  at: number;
}

/** idle: nothing sent yet; running: events are arriving; stopping: a stop was asked for. */
export type RunPhase = 'idle' | 'running' | 'stopping' | 'finished';

/** A delegated task: its id and its own run, shown as a nested timeline. */
export interface ChildRun {
  task: string;
  run: RunState;
}

export interface RunState {
  sessionId: string | null;
  provider: string | null;
  model: string | null;
  phase: RunPhase;
  outcome: RunStatus | null;
  chat: ChatMessage[];
  /** The assistant's text as it streams in, before its message is complete. */
  draft: string;
  /** The model's thinking as it streams in: progress shown as a quiet line, not as text. */
  thinking: string;
  timeline: TimelineEntry[];
  pending: ApprovalRequest | null;
  stall: StallQuestion | null;
  /** The newest screenshot, what an approval is shown on. */
  screen: ImageRef | null;
  retry: RetryNotice | null;
  error: ErrorNotice | null;
  /** What the shell said about the current run that is not part of it (a plugin server that
   * did not start), in order. Not stored: a reopened session has none. */
  notices: string[];
  /** The model's current plan (the `plan` tool), and what its last change changed. */
  plan: PlanStep[];
  planChanges: PlanChange[];
  replanned: boolean;
  /** The notes in the current run's system prompt. */
  notes: NoteRef[];
  /** Everything this session has used, over all its runs. */
  usage: Usage;
  /** What that cost in US dollars; null while no price is known. */
  cost: number | null;
  /** Where the current run's model price comes from; null without a price. */
  priceSource: PriceSource | null;
  turns: number;
  /** The current run's forecast warning, if its pace passes the budget. */
  forecast: CostForecast | null;
  /** Older turns the run sends as a summary to fit the context; null while it sends them all. */
  summarized: Summarized | null;
  /** How the last run was checked; null until its `verification` event. */
  verification: Verification | null;
  /** Session usage when the current run started; the run's totals add to it. */
  usageBase: Usage;
  costBase: number | null;
  historyLength: number;
  /** Tasks this run delegated, each folded like a run of its own, in the order they began. */
  children: ChildRun[];
  /** The role of the history's last message, to recognise merged user messages. */
  lastRole: Role | null;
  nextKey: number;
}

export function zeroUsage(): Usage {
  return {
    input_tokens: 0,
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cache_creation_input_tokens: a.cache_creation_input_tokens + b.cache_creation_input_tokens,
    cache_read_input_tokens: a.cache_read_input_tokens + b.cache_read_input_tokens,
  };
}

/** A cost added to another; unknown only when both are. */
export function addCost(a: number | null, b: number | null | undefined): number | null {
  return a === null && (b === null || b === undefined) ? null : (a ?? 0) + (b ?? 0);
}

export function initialRunState(): RunState {
  return {
    sessionId: null,
    provider: null,
    model: null,
    phase: 'idle',
    outcome: null,
    chat: [],
    draft: '',
    thinking: '',
    timeline: [],
    pending: null,
    stall: null,
    screen: null,
    retry: null,
    error: null,
    notices: [],
    plan: [],
    planChanges: [],
    replanned: false,
    notes: [],
    usage: zeroUsage(),
    cost: null,
    priceSource: null,
    turns: 0,
    forecast: null,
    summarized: null,
    verification: null,
    usageBase: zeroUsage(),
    costBase: null,
    historyLength: 0,
    children: [],
    lastRole: null,
    nextKey: 0,
  };
}
