// Mirrors of the Rust core's wire types (serde JSON), kept field-for-field:
//   src-tauri/core/src/agent/event.rs     AgentEvent, RunStatus
//   src-tauri/core/src/agent/approval.rs  ApprovalRequest, Decision, DecidedBy, ApprovalPolicy
//   src-tauri/core/src/tools/mod.rs       ActionPlan (flattened into ApprovalRequest)
//   src-tauri/core/src/images.rs          ImageRef
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
  | { type: 'redacted_thinking'; data: string };

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

export type RunStatus = 'done' | 'max_turns' | 'cancelled' | 'budget' | 'error';

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
  /** Tool-specific: `{screen, model}` coordinates, `{command}`, `{diff}`, or anything else. */
  detail: unknown;
}

export interface ApprovalRequest extends ActionPlan {
  tool_use_id: string;
  tool: string;
  input: unknown;
}

export type AgentEvent =
  | { type: 'started'; session_id: string; provider: string; model: string }
  | { type: 'text_delta'; text: string }
  | { type: 'message'; message: Message }
  | { type: 'tool_call'; id: string; name: string; input: unknown }
  | { type: 'approval_needed'; request: ApprovalRequest }
  | ({ type: 'approval_decided'; id: string; by: DecidedBy } & Decision)
  | {
      type: 'tool_result';
      id: string;
      name: string;
      is_error: boolean;
      text: string;
      images: ImageRef[];
      duration_ms: number;
    }
  | { type: 'retrying'; attempt: number; delay_ms: number; error: string }
  | {
      type: 'usage';
      turn: Usage;
      total: Usage;
      /** US dollars, where the model's price is known. */
      turn_cost_usd?: number | null;
      total_cost_usd?: number | null;
    }
  | { type: 'error'; message: string }
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
  | 'error'
  | 'interrupted';

export interface TaskInfo {
  id: string;
  session_id: string;
  state: TaskState;
  origin: 'cli' | 'api' | 'window';
  prompt: string;
  pid: number;
  waiting_for: ApprovalRequest | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}
