// Mirrors of the Rust core's wire types (serde JSON), kept field-for-field:
//   src-tauri/core/src/agent/event.rs     AgentEvent, RunStatus
//   src-tauri/core/src/agent/approval.rs  ApprovalRequest, Decision, DecidedBy, ApprovalPolicy
//   src-tauri/core/src/tools/mod.rs       ActionPlan (flattened into ApprovalRequest)
//   src-tauri/core/src/images.rs          ImageRef
//   src-tauri/core/src/tools/plan.rs      PlanStep, StepStatus, PlanChange
//   src-tauri/core/src/memory/mod.rs      Note, NoteRef
//   src-tauri/core/src/llm/message.rs     Message, ContentBlock, Usage
// The one deliberate difference is `ImageSource`'s `ref` variant: the shell replaces the
// base64 pixels of images in `Message` events with a reference (see docs/ipc.md).

export type Role = 'user' | 'assistant';

export interface ImageRef {
  sha256: string;
  media_type: string;
  bytes: number;
}

export type ImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | ({ type: 'ref' } & ImageRef);

export type ToolResultContent =
  | { type: 'text'; text: string }
  | { type: 'image'; source: ImageSource };

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: ImageSource }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content: ToolResultContent[];
      /** Omitted by serde when false. */
      is_error?: boolean;
    }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  /** An item of OpenAI's Responses API kept for that API; nothing to show. */
  | { type: 'openai_item'; item: unknown };

export interface Message {
  role: Role;
  content: ContentBlock[];
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** What failed (src-tauri/core/src/llm/error.rs ErrorKind). */
export type ErrorKind =
  | 'auth'
  | 'billing'
  | 'permission'
  | 'not_found'
  | 'invalid_request'
  | 'context_too_long'
  | 'rate_limited'
  | 'overloaded'
  | 'server'
  | 'network'
  | 'stream_cut'
  | 'protocol'
  | 'redirected';

/** How a tool call ended (agent/event.rs ToolStatus). */
export type ToolStatus = 'ok' | 'error' | 'cancelled' | 'denied';

export type RunStatus = 'done' | 'max_turns' | 'cancelled' | 'budget' | 'stalled' | 'error';

// src-tauri/core/src/agent/stall.rs and verify.rs
export type StallPattern = 'same_action' | 'cycle' | 'no_change';
export type StallStep = 'note' | 'ask' | 'stalled';
export type StallAnswer =
  | { answer: 'continue' }
  | { answer: 'hint'; text: string }
  | { answer: 'stop' }
  | { answer: 'no_one' };
export type VerifyOutcome = 'verified' | 'unverified' | 'failed';

export interface Verification {
  outcome: VerifyOutcome;
  check: string | null;
  exit_code: number | null;
  output: string;
  /** Why the check could not run. */
  error: string | null;
  retried: boolean;
}

/** A check as saved with a session (verify.rs SavedCheck): `sh -c command`, exit 0 passes. */
export interface SavedCheck {
  command: string;
  timeout_secs: number;
}

/** The approval policy; the UI calls `deny` "read-only". */
export type ApprovalMode = 'ask' | 'auto' | 'deny';

export type DecidedBy = 'policy' | 'session_rule' | 'user';

export type Decision =
  | { decision: 'approve' }
  | { decision: 'approve_kind' }
  | { decision: 'deny'; reason: string | null };

export interface ActionPlan {
  /** What "always allow this kind" allows, e.g. `computer.left_click` or `bash`. */
  kind: string;
  read_only: boolean;
  summary: string;
  /** What the window draws for this kind of action (the core's `ActionDetail`). */
  detail: ActionDetail;
  /** Checks the model service raised, which approving acknowledges; absent when none. */
  safety_checks?: SafetyCheck[];
  /** For a click, drag or type at a point: the element there (docs/elements.md). */
  target?: ApprovalTarget;
}

/** A point on the desktop, in screen pixels. */
export interface ScreenPoint {
  x: number;
  y: number;
}

/**
 * The core's `ActionDetail`: one shape per kind of action, without a tag (the fields tell
 * them apart), `null` when there is nothing to draw. docs/ipc.md lists them.
 */
export type ActionDetail =
  | PointerDetail
  | { command: string; timeout_s: number }
  | { restart: boolean }
  | { path: string; diff: string }
  | { path: string }
  | { id: number; before: string; note: string }
  | { id: number; note: string }
  | { note: string }
  | { session_id: string }
  | { server: string; tool: string; arguments: unknown }
  | { to: string; target: string; prompt: string; max_turns: number; max_cost_usd: number | null; timeout_secs: number }
  | { action: string }
  | null;

/** A computer action, or a `ui` action on an element, at points on the screen. */
export interface PointerDetail {
  action: string;
  /** The `ui` tool's element ref. */
  ref?: string;
  monitor?: number;
  /** In the screenshot's space, in order: a drag's start, then its end. */
  model_points: [number, number][];
  screen_points: ScreenPoint[];
  model_size: { width: number; height: number };
}

/** A safety check a model service raised (OpenAI's `pending_safety_checks`). */
export interface SafetyCheck {
  id: string;
  code: string;
  message: string;
}

/** What an input action will touch; `known: false` says nothing is known there. */
export interface ApprovalTarget {
  known: boolean;
  name: string;
  role: string;
  app: string;
  /** On the sensitive list (Delete, Pay, Send, ...): auto mode asks first. */
  sensitive: boolean;
  /** With `known: false`, why the tree could not be asked; absent when nothing is there. */
  why?: string;
}

export interface ApprovalRequest extends ActionPlan {
  tool_use_id: string;
  tool: string;
  input: unknown;
}

export type StepStatus = 'pending' | 'in_progress' | 'done' | 'skipped';

export interface PlanStep {
  id: string;
  title: string;
  status: StepStatus;
  note: string;
}

/** One difference a `plan_updated` event reports between the plan before and after. */
export type PlanChange =
  | { kind: 'added'; id: string; title: string }
  | { kind: 'removed'; id: string; title: string }
  | { kind: 'retitled'; id: string; from: string; to: string }
  | { kind: 'status'; id: string; from: StepStatus; to: StepStatus }
  | { kind: 'note'; id: string; note: string };

/** A note as the `started` event names it: what went into the run's system prompt. */
export interface NoteRef {
  id: number;
  text: string;
}

/** A note as stored (list_notes and the other notes commands). */
export interface Note extends NoteRef {
  /** The session it was written in; null for the person's own notes. */
  session_id: string | null;
  /** RFC 3339. */
  created_at: string;
  updated_at: string;
}

export type AgentEvent =
  | {
      type: 'started';
      session_id: string;
      provider: string;
      model: string;
      /** Absent in events stored before notes existed. */
      notes?: NoteRef[];
      /** Tool types the endpoint refused for this model, each with why. */
      tool_fallbacks?: string[];
    }
  | { type: 'text_delta'; text: string }
  | { type: 'thinking_delta'; text: string }
  | { type: 'message'; message: Message }
  | { type: 'tool_call'; id: string; name: string; input: unknown }
  | { type: 'approval_needed'; request: ApprovalRequest }
  | ({ type: 'approval_decided'; id: string; by: DecidedBy } & Decision)
  | {
      type: 'tool_result';
      id: string;
      name: string;
      is_error: boolean;
      /** Absent in events stored before statuses existed. */
      status?: ToolStatus;
      text: string;
      images: ImageRef[];
      duration_ms: number;
      /** Computer actions only: false when the screen did not change. */
      changed?: boolean;
    }
  | { type: 'retrying'; attempt: number; delay_ms: number; kind?: ErrorKind; error: string }
  | {
      type: 'usage';
      turn: Usage;
      total: Usage;
      /** US dollars, where the model's price is known. */
      turn_cost_usd?: number | null;
      total_cost_usd?: number | null;
    }
  | { type: 'plan_updated'; steps: PlanStep[]; changes: PlanChange[]; replanned: boolean }
  | {
      type: 'cost_forecast';
      turns: number;
      max_turns: number;
      forecast_cost_usd: number | null;
      max_cost_usd: number | null;
      forecast_tokens: number;
      max_tokens: number | null;
    }
  | { type: 'stall_detected'; pattern: StallPattern; steps: string[]; step: StallStep; message: string }
  | ({ type: 'stall_answered' } & StallAnswer)
  | ({ type: 'verification' } & Verification)
  /** An event of a task this run delegated (the `delegate` tool), as the child stored it. */
  | { type: 'child_event'; task: string; event: AgentEvent }
  | { type: 'error'; kind?: ErrorKind; message: string }
  | {
      type: 'done';
      status: RunStatus;
      turns: number;
      session_id: string;
      usage: Usage;
      cost_usd?: number | null;
    };

// src-tauri/core/src/tasks/state.rs: TaskState, TaskInfo (docs/ipc.md, "Tasks").
export type TaskState =
  | 'queued'
  | 'running'
  | 'waiting_for_approval'
  | 'done'
  | 'max_turns'
  | 'budget'
  | 'cancelled'
  | 'stalled'
  | 'error'
  | 'interrupted';

export interface TaskInfo {
  id: string;
  session_id: string;
  state: TaskState;
  origin: 'cli' | 'api' | 'window' | 'delegate';
  prompt: string;
  pid: number;
  waiting_for: ApprovalRequest | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}
