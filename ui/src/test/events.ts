// Builders for AgentEvent sequences as the core emits them (agent/run.rs).
import type { AgentEvent, ApprovalRequest, ImageRef, Message, StallStep, ToolStatus, Usage } from '../lib/types';

export function usage(input: number, output: number): Usage {
  return {
    input_tokens: input,
    output_tokens: output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}

export function image(sha256: string): ImageRef {
  return { sha256, media_type: 'image/png', bytes: 1234 };
}

export const started = (session_id = 's1'): AgentEvent => ({
  type: 'started',
  session_id,
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
});

export const delta = (text: string): AgentEvent => ({ type: 'text_delta', text });

export const message = (message: Message): AgentEvent => ({ type: 'message', message });

export const userText = (text: string): AgentEvent =>
  message({ role: 'user', content: [{ type: 'text', text }] });

export const assistantText = (text: string): AgentEvent =>
  message({ role: 'assistant', content: [{ type: 'text', text }] });

export const click = (x: number, y: number) =>
  ({ action: 'left_click', coordinate: [x, y] }) as const;

export function approvalRequest(id: string, overrides: Partial<ApprovalRequest> = {}): ApprovalRequest {
  return {
    tool_use_id: id,
    tool: 'computer',
    input: { action: 'left_click', coordinate: [100, 50] },
    kind: 'computer.left_click',
    read_only: false,
    summary: 'left_click at (100, 50) → screen (150, 75)',
    detail: {
      action: 'left_click',
      model_points: [[100, 50]],
      screen_points: [{ x: 150, y: 75 }],
      model_size: { width: 1366, height: 768 },
    },
    ...overrides,
  };
}

export const toolCall = (id: string, name = 'computer', input: unknown = click(100, 50)): AgentEvent => ({
  type: 'tool_call',
  id,
  name,
  input,
});

export const toolResult = (
  id: string,
  opts: {
    isError?: boolean;
    status?: ToolStatus;
    text?: string;
    images?: ImageRef[];
    name?: string;
    ms?: number;
    changed?: boolean;
  } = {},
): AgentEvent => ({
  type: 'tool_result',
  id,
  name: opts.name ?? 'computer',
  is_error: opts.isError ?? false,
  ...(opts.status === undefined ? {} : { status: opts.status }),
  text: opts.text ?? '',
  images: opts.images ?? [],
  duration_ms: opts.ms ?? 120,
  ...(opts.changed === undefined ? {} : { changed: opts.changed }),
});

export const done = (
  status: 'done' | 'max_turns' | 'cancelled' | 'stalled' | 'error',
  total: Usage = usage(0, 0),
  turns = 1,
): AgentEvent => ({ type: 'done', status, turns, session_id: 's1', usage: total });

/** The stall breaker's `same_action` rung `step`, over the calls `steps`. */
export const stall = (step: StallStep, steps = ['t1', 't2', 't3']): AgentEvent => ({
  type: 'stall_detected',
  pattern: 'same_action',
  steps,
  step,
  message: 'the same action ran 3 times in a row on the same screen',
});
