// Generated from the Rust types by src-tauri/src/typescript.rs: do not edit. To change a type,
// change it in Rust and run `DESKHAND_BLESS_TYPES=1 cargo test -p deskhand-app --lib typescript`.
// Integers are numbers: the values the window sees stay far below 2^53.

/**
 * The dangerous classes of action: one whose decisive arguments came from untrusted content
 * asks the person in every mode.
 */

export type ActionClass = "run_command" | "network_transfer" | "install" | "send" | "credentials" | "delete" | "write_outside" | "remember";

/**
 * An action plan's `detail`. On the wire it is the variant's fields alone (untagged), as
 * the free JSON before it was, and `null` for an action with nothing to draw. Reading it
 * back tries the variants in order, so each one comes before any with a subset of its
 * fields.
 */

export type ActionDetail = PointerDetail | { command: string, timeout_s: number, } | { restart: boolean, } | { path: string, diff: string, } | { path: string, } | { id: number, before: string, note: string, } | { id: number, note: string, } | { note: string, } | { session_id: SessionId, } | { server: string, tool: string, arguments: unknown, } | DelegateDetail | { action: string, } | null;

/**
 * What a tool call will do, as the approval gate and the person see it.
 */

export type ActionPlan = { 
/**
 * What "always allow this kind" allows, e.g. `computer.left_click` or `bash`.
 */
kind: string, 
/**
 * Read-only actions (a screenshot, viewing a file) pass the gate without asking, except
 * reads of secret places (`agent::SecretPlaces`, found by the detail's `path`).
 */
read_only: boolean, 
/**
 * One line for a prompt, e.g. "left_click at (640, 400) → screen (960, 600)".
 */
summary: string, 
/**
 * What a window draws for this kind of action: screen points, the command, a diff.
 */
detail: ActionDetail, 
/**
 * The action captures the screen or sends it input. A front end with a window on the
 * same screen gets out of the way for it (its window must never be clicked, typed into
 * or seen); the tool that plans the action says so, whatever its name.
 */
on_screen?: boolean, 
/**
 * The safety checks the model service raised about this call, which only a person may
 * acknowledge (see `agent::approval::with_safety_checks`). Absent when there are none.
 */
safety_checks?: Array<SafetyCheck>, 
/**
 * For a click, drag or type at a point: the element there, found before asking.
 * Absent for actions without a point.
 */
target?: Target, };

export type AgentEvent = { "type": "started", session_id: SessionId, provider: string, model: string, 
/**
 * The notes put into this run's system prompt (none with `--no-memory`). Absent in
 * events stored before notes existed.
 */
notes?: Array<NoteRef>, 
/**
 * Tool types the provider no longer offers this model because its endpoint refused
 * them (the computer toolset stepped down to `computer_20251124`, say).
 */
tool_fallbacks?: Array<string>, 
/**
 * Where the model's price comes from, when it has one: a cost from a `reseller`
 * price is likely, not certain, and the front ends say so with it.
 */
price_source?: PriceSource, 
/**
 * Said before the run starts: a model past its retirement date.
 */
warnings?: Array<string>, } | { "type": "text_delta", text: string, } | { "type": "thinking_delta", text: string, } | { "type": "message", message: Message, } | { "type": "tool_call", id: ToolUseId, name: string, input: unknown, } | { "type": "approval_needed", request: ApprovalRequest, } | { "type": "approval_decided", id: ToolUseId, by: DecidedBy, 
/**
 * For `by: "api"`: which client answered (its connection's peer, or the token).
 */
client?: string, } & ({ "decision": "approve" } | { "decision": "approve_kind" } | { "decision": "deny", reason: string | null, }) | { "type": "tool_result", id: ToolUseId, name: string, is_error: boolean, 
/**
 * How the call ended. Absent in events stored before it existed, where `is_error`
 * is all there is.
 */
status?: ToolStatus, 
/**
 * The result's text parts joined.
 */
text: string, 
/**
 * The result's images: as the tool made them until the recorder has kept their
 * bytes in the store, then refs. On the wire always refs (`ImageRef`s), so a front
 * end reads every one back by its hash.
 */
images: Array<ImageRef>, duration_ms: number, 
/**
 * For a computer action: whether the screen changed (false: the action did
 * nothing visible). Absent for other tools.
 */
changed?: boolean, } | { "type": "retrying", attempt: number, delay_ms: number, 
/**
 * What failed. Absent in events stored before kinds existed.
 */
kind?: ErrorKind, error: string, } | { "type": "usage", turn: Usage, total: Usage, 
/**
 * Absent in events stored before costs existed.
 */
turn_cost_usd?: number | null, total_cost_usd?: number | null, } | { "type": "context_summarized", upto: number, tokens_before: number, tokens_after: number, } | { "type": "plan_updated", steps: Array<PlanStep>, changes: Array<PlanChange>, replanned: boolean, } | { "type": "cost_forecast", turns: number, max_turns: number, forecast_cost_usd: number | null, max_cost_usd: number | null, forecast_tokens: number, max_tokens: number | null, } | { "type": "stall_detected", pattern: StallPattern, steps: Array<ToolUseId>, step: StallStep, message: string, } | { "type": "stall_answered", } & ({ "answer": "continue" } | { "answer": "hint", text: string, } | { "answer": "stop" } | { "answer": "no_one" }) | { "type": "suspected_injection", id: ToolUseId, source: Source, 
/**
 * Where it was read, e.g. "the output of `cat README.md` at step 2".
 */
origin: string, 
/**
 * What it looks like: `ignore previous instructions`, `role marker`, `fake tool
 * call`, `addressed to the agent`, `download piped to a shell`.
 */
pattern: string, 
/**
 * The line it was found on.
 */
text: string, } | { "type": "child_event", task: TaskId, event: AgentEvent, } | { "type": "verification" } & Verification | { "type": "error", 
/**
 * What failed. Absent in events stored before kinds existed.
 */
kind?: ErrorKind, message: string, } | { "type": "done", status: RunStatus, turns: number, session_id: SessionId, usage: Usage, 
/**
 * Absent in events stored before costs existed.
 */
cost_usd?: number | null, };

export type ApprovalPolicy = "ask" | "auto" | "deny";

/**
 * What the person is asked to approve.
 */

export type ApprovalRequest = { tool_use_id: ToolUseId, tool: string, input: unknown, 
/**
 * For an action of a batched call (OpenAI's GA computer tool): the summary of every
 * action of the batch, in order. The answer holds for all of them, so the person sees
 * them all. Absent for a call on its own.
 */
batch?: Array<string>, 
/**
 * Set when a decisive argument of the action first appeared in untrusted content of the
 * run (a file, the screen, a plugin's result): where, and that text. Such an action is
 * asked about in every mode.
 */
derived_from?: Derivation, 
/**
 * Only a person may answer this one; no policy, rule or scope does: it carries a safety
 * check, reaches a secret place, changes a note, came from untrusted content, or follows
 * a suspected injection. Absent when false.
 */
needs_person?: boolean, 
/**
 * What "always allow this kind" allows, e.g. `computer.left_click` or `bash`.
 */
kind: string, 
/**
 * Read-only actions (a screenshot, viewing a file) pass the gate without asking, except
 * reads of secret places (`agent::SecretPlaces`, found by the detail's `path`).
 */
read_only: boolean, 
/**
 * One line for a prompt, e.g. "left_click at (640, 400) → screen (960, 600)".
 */
summary: string, 
/**
 * What a window draws for this kind of action: screen points, the command, a diff.
 */
detail: ActionDetail, 
/**
 * The action captures the screen or sends it input. A front end with a window on the
 * same screen gets out of the way for it (its window must never be clicked, typed into
 * or seen); the tool that plans the action says so, whatever its name.
 */
on_screen?: boolean, 
/**
 * The safety checks the model service raised about this call, which only a person may
 * acknowledge (see `agent::approval::with_safety_checks`). Absent when there are none.
 */
safety_checks?: Array<SafetyCheck>, 
/**
 * For a click, drag or type at a point: the element there, found before asking.
 * Absent for actions without a point.
 */
target?: Target, };

/**
 * An image held for the next message, as the window sees it.
 */

export type AttachedImage = { id: string, sha256: string, media_type: string, width: number, height: number, };

export type AttachmentRef = { id: string, };

/**
 * What happens to the runs missed while the daemon was not running (or the machine slept).
 */

export type CatchUp = "once" | "skip" | { "each": number };

export type ContentBlock = { "type": "text", text: string, } | { "type": "image", source: ImageSource, } | { "type": "tool_use", id: ToolUseId, name: string, input: unknown, 
/**
 * Set on a toolset member's call (`name` is then the member, e.g. `left_click`).
 */
toolset_name?: string, } | { "type": "tool_result", tool_use_id: ToolUseId, content: Array<ToolResultContent>, is_error?: boolean, 
/**
 * Echoes the call's `toolset_name`: the API rejects a member's result without it.
 */
toolset_name?: string, } | { "type": "thinking", thinking: string, signature: string, } | { "type": "redacted_thinking", data: string, } | { "type": "openai_item", item: unknown, };

/**
 * Who made a decision, for the action log.
 */

export type DecidedBy = "policy" | "session_rule" | "user" | "window" | "terminal" | "api";

export type Decision = { "decision": "approve" } | { "decision": "approve_kind" } | { "decision": "deny", reason: string | null, };

/**
 * A sub-task handed to another Deskhand agent.
 */

export type DelegateDetail = { to: string, 
/**
 * The remote's name and URL, or a new agent desktop on this machine.
 */
target: string, prompt: string, max_turns: number, max_cost_usd: number | null, timeout_secs: number, };

/**
 * Why the gate asks about an action: a decisive argument of it first appeared in untrusted
 * content of this run, not in anything the person wrote.
 */

export type Derivation = { class: ActionClass, 
/**
 * Which argument: `command`, `typed text`, `plugin call`, `task`.
 */
argument: string, source: Source, 
/**
 * Where the content was read, e.g. "the output of `cat README.md` at step 4".
 */
origin: string, 
/**
 * The untrusted text the argument appears in, shortened around it.
 */
text: string, };

/**
 * Where a session's runs work, as saved with the session (by the window's side panel, or by
 * a task that chose it, from any front end): the person's screen, or an agent desktop
 * (sandboxed unless turned off, and kept between runs if asked).
 */

export type DesktopChoice = { agent: boolean, sandbox: boolean, keep: boolean, };

/**
 * What kind of failure it was. It travels in `error` and `retrying` events, so that front
 * ends decide what to advise by the kind and never by the wording.
 */

export type ErrorKind = "auth" | "billing" | "permission" | "not_found" | "invalid_request" | "context_too_long" | "rate_limited" | "overloaded" | "server" | "network" | "stream_cut" | "protocol" | "redirected";

/**
 * An image by content hash, for events and the store: never the pixels themselves.
 */

export type ImageRef = { sha256: string, media_type: string, bytes: number, };

export type ImageSource = { "type": "base64", media_type: string, data: string, } | { "type": "ref" } & ImageRef;

export type IpcError = { kind: IpcErrorKind, message: string, };

export type IpcErrorKind = "no_key" | "keyring_unavailable" | "busy" | "not_found" | "invalid" | "capture_failed" | "declined" | "internal";

/**
 * A provider's key status, and whether it needs a key at all (local servers do not).
 */

export type KeyInfo = { required: boolean, provider: string, set: boolean, 
/**
 * The key's last four characters, never more of it.
 */
last4: string | null, 
/**
 * Where the key comes from: an environment variable overrides the keyring.
 */
source: KeySource | null, keyring_available: boolean, 
/**
 * Why the keyring cannot be used, and how to fix it (the first-run prompt shows it).
 */
keyring_error: string | null, };

export type KeySource = "keyring" | "environment";

/**
 * Everything the window needs to show a stored session: messages and events (images as
 * refs), events in order over all runs so they can be replayed.
 */

export type LoadedSession = { session: SessionSummary, messages: Array<Message>, events: Array<AgentEvent>, };

export type Message = { role: Role, content: Array<ContentBlock>, };

export type MonitorInfo = { 
/**
 * What the `monitor` setting holds; `deskhand monitors` and `--monitor` use the same.
 */
index: number, name: string, width: number, height: number, primary: boolean, 
/**
 * What the model sees of it with the current screenshot setting.
 */
model_width: number, model_height: number, };

/**
 * A note as stored.
 */

export type Note = { id: number, text: string, 
/**
 * The session the note was written in; `None` for notes the person wrote (`deskhand
 * notes add`, the window) and once that session is deleted.
 */
session_id: SessionId | null, 
/**
 * RFC 3339, UTC.
 */
created_at: string, updated_at: string, };

/**
 * A note as the `started` event names it: what went into the system prompt.
 */

export type NoteRef = { id: number, text: string, };

/**
 * What happens when a run is due while the schedule's previous run still runs.
 */

export type Overlap = "skip" | "queue" | "cancel";

/**
 * One difference between the plan before and after a change, for the window and the CLI.
 */

export type PlanChange = { "kind": "added", id: string, title: string, } | { "kind": "removed", id: string, title: string, } | { "kind": "retitled", id: string, from: string, to: string, } | { "kind": "status", id: string, from: StepStatus, to: StepStatus, } | { "kind": "note", id: string, note: string, };

export type PlanStep = { id: string, title: string, status: StepStatus, note: string, };

export type PointerButton = "left" | "middle" | "right";

/**
 * Where a pointer action lands.
 */

export type PointerDetail = { 
/**
 * The computer or `ui` action, e.g. `left_click`.
 */
action: string, 
/**
 * The `ui` tool's element ref.
 */
ref?: string, 
/**
 * The monitor the computer tool acts on.
 */
monitor?: number, 
/**
 * The points in the screenshot's space, in order (a drag's start, then its end).
 */
model_points: Array<[number, number]>, 
/**
 * The same points on the desktop.
 */
screen_points: Array<ScreenPoint>, 
/**
 * The size of the screenshots the model sees.
 */
model_size: Size, };

/**
 * Where a model's price comes from, said wherever a cost is shown or limited: a reseller's
 * list is likely, not certain.
 */

export type PriceSource = "official" | "reseller" | "file";

/**
 * A provider the settings offer, as the core knows it.
 */

export type ProviderInfo = { id: string, name: string, 
/**
 * Local servers need no key.
 */
needs_key: boolean, default_model: string | null, default_base_url: string | null, };

export type Role = "user" | "assistant";

export type RunStatus = "done" | "max_turns" | "cancelled" | "error" | "budget" | "stalled" | "needs_approval";

/**
 * A safety check a model service raised about an action (OpenAI's `pending_safety_checks`),
 * which only a person may acknowledge. Every field is kept as the service sent it, empty
 * when it sent none.
 */

export type SafetyCheck = { id: string, code: string, message: string, };

/**
 * A check as saved with a session (the window's settings for that session).
 */

export type SavedCheck = { command: string, timeout_secs: number, };

/**
 * A schedule as stored and shown.
 */

export type Schedule = { id: ScheduleId, paused: boolean, 
/**
 * Why it paused itself, or that a person paused it.
 */
paused_reason: string | null, 
/**
 * The last due time that was fired (or skipped by the catch-up policy): no due time at
 * or before it runs again, whatever the clock does.
 */
last_due: string | null, 
/**
 * The next due time, `None` when there is none (an `--at` that ran, a paused one).
 */
next_due: string | null, 
/**
 * Failed runs since the last one that did not fail.
 */
failures_in_a_row: number, created_at: string, 
/**
 * Unique among schedules; how the CLI names it.
 */
name: string, trigger: Trigger, prompt: string, 
/**
 * A session every run continues; `None`: each run starts a new one.
 */
session: SessionId | null, 
/**
 * Runs work on their own agent desktop, not the person's screen.
 */
agent_desktop: boolean, 
/**
 * A shell command that proves a run done (exit 0: verified).
 */
check: string | null, scope: Scope, 
/**
 * Each run's cost limit in US dollars.
 */
max_cost_usd: number | null, catch_up: CatchUp, overlap: Overlap, 
/**
 * How long a run waits for a person to approve an action outside its scope before it
 * ends `needs_approval`.
 */
approval_deadline_secs: number, 
/**
 * Failed runs in a row after which the schedule pauses itself (0: never).
 */
pause_after_failures: number, };

/**
 * A schedule: a prompt the daemon runs as a task at the times its trigger names.
 */

export type ScheduleId = string;

/**
 * What a run nobody watches may do without asking: the tools it may use without asking.
 * Anything else waits for a person, until the schedule's approval deadline.
 */

export type Scope = { tools: Array<string>, };

/**
 * A point on the desktop, in screen pixels.
 */

export type ScreenPoint = { x: number, y: number, };

/**
 * A search result: the session and plain text around its best match.
 */

export type SessionHit = { snippet: string, id: SessionId, title: string, 
/**
 * RFC 3339, UTC.
 */
created_at: string, updated_at: string, provider: string, model: string, message_count: number, 
/**
 * Tokens over all of the session's runs.
 */
usage: Usage, 
/**
 * US dollars over all runs, where the model's price was known.
 */
cost_usd: number | null, };

/**
 * A stored session: one conversation and every run that continued it.
 */

export type SessionId = string;

/**
 * A session as lists show it (the window's `SessionSummary`).
 */

export type SessionSummary = { id: SessionId, title: string, 
/**
 * RFC 3339, UTC.
 */
created_at: string, updated_at: string, provider: string, model: string, message_count: number, 
/**
 * Tokens over all of the session's runs.
 */
usage: Usage, 
/**
 * US dollars over all runs, where the model's price was known.
 */
cost_usd: number | null, };

/**
 * Width × height in pixels.
 */

export type Size = { width: number, height: number, };

/**
 * Who wrote a piece of context. Only the person's words are trusted: everything a tool, the
 * screen or the model produced is data. Anything stored before sources were recorded reads
 * as `unknown`, which is untrusted too.
 */

export type Source = "person" | "model" | "screenshot" | "ocr" | "accessibility" | "bash" | "file" | "plugin" | "delegate" | "recall" | "note" | "unknown";

/**
 * The person's answer to a [`StallQuestion`].
 */

export type StallAnswer = { "answer": "continue" } | { "answer": "hint", text: string, } | { "answer": "stop" } | { "answer": "no_one" };

export type StallPattern = "same_action" | "cycle" | "no_change";

/**
 * Which rung of the ladder a detection reached.
 */

export type StallStep = "note" | "ask" | "stalled";

export type StepStatus = "pending" | "in_progress" | "done" | "skipped";

/**
 * One input of the person, in the desktop's pixels (the live view maps its scaled
 * coordinates back before sending).
 */

export type TakeOverInput = { "kind": "click", x: number, y: number, button: PointerButton, } | { "kind": "scroll", x: number, y: number, amount: number, } | { "kind": "key", keys: string, } | { "kind": "text", text: string, };

/**
 * What an input action will touch, found by a hit test before the person is asked: the
 * approval says it in words. `known: false` says nothing is known there (no tree, or no
 * element under the point); approvals then say so and never guess.
 */

export type Target = { known: boolean, name: string, role: string, app: string, 
/**
 * The name is on the sensitive list: auto mode asks before a click on it.
 */
sensitive: boolean, 
/**
 * With `known: false`, why the tree could not be asked (no accessibility bus, a tree
 * that did not answer); absent when it was asked and no element is there.
 */
why?: string, };

/**
 * A task: one run of the agent, submitted by a front end or a `delegate` call.
 */

export type TaskId = string;

/**
 * A task as listed and shown.
 */

export type TaskInfo = { id: TaskId, session_id: SessionId, state: TaskState, origin: TaskOrigin, 
/**
 * The first line of the prompt.
 */
prompt: string, 
/**
 * The process running it.
 */
pid: number, 
/**
 * The action waiting for an answer, while `state` is `waiting_for_approval`.
 */
waiting_for: ApprovalRequest | null, 
/**
 * Why it failed, for `error` (and for `interrupted`).
 */
error: string | null, 
/**
 * RFC 3339, UTC.
 */
created_at: string, updated_at: string, };

/**
 * Which front end submitted a task.
 */

export type TaskOrigin = "cli" | "api" | "window" | "delegate" | "schedule";

/**
 * Where a task stands. The first three are live; the others are final.
 */

export type TaskState = "queued" | "running" | "waiting_for_approval" | "done" | "max_turns" | "budget" | "cancelled" | "error" | "stalled" | "interrupted" | "needs_approval";

/**
 * What a `tool_result` may carry: text and images only.
 */

export type ToolResultContent = { "type": "text", text: string, } | { "type": "image", source: ImageSource, };

/**
 * How a tool call ended, so that front ends tell a stop or a denial from a failure without
 * reading the result's text.
 */

export type ToolStatus = "ok" | "error" | "cancelled" | "denied";

/**
 * A tool call, as the model named it in its `tool_use` block; the result, the approval
 * and the action log name the call by it.
 */

export type ToolUseId = string;

/**
 * When a schedule runs.
 */

export type Trigger = { "kind": "cron", expr: string, tz: string, } | { "kind": "every", seconds: number, } | { "kind": "at", at: string, };

/**
 * Token counts as the API reports them; cache fields are zero where caching is off.
 */

export type Usage = { input_tokens: number, output_tokens: number, cache_creation_input_tokens: number, cache_read_input_tokens: number, };

/**
 * The result of checking one run, stored with it as its `verification` event.
 */

export type Verification = { outcome: VerifyOutcome, 
/**
 * The check command, if there was one.
 */
check: string | null, exit_code: number | null, 
/**
 * The check's output (stdout, then stderr), its start and end if long.
 */
output: string, 
/**
 * Why the check could not run (it timed out, could not start, was stopped).
 */
error: string | null, 
/**
 * Whether a failure was sent back to the model for a second try.
 */
retried: boolean, };

export type VerifyOutcome = "verified" | "unverified" | "failed";

/**
 * What the live view shows: the display, and the desktop's size that take-over
 * coordinates are in.
 */

export type Watching = { display: string, screen: Size, };

/**
 * What the settings dialog edits: the window's settings, and the run budget and
 * set-of-marks that live in the store beside the history, shared with `deskhand settings`
 * and `deskhand serve`.
 */

export type WindowSettings = { 
/**
 * US dollars a run may cost; `None` is no limit.
 */
max_cost_usd: number | null, 
/**
 * Tokens a run may use; `None` is no limit.
 */
max_tokens: number | null, 
/**
 * Numbered marks on the computer tool's screenshots (`deskhand_engine::elements::marks`).
 */
set_of_marks: boolean, 
/**
 * A `ProviderKind` id: anthropic, openai, azure, openrouter, ollama, lmstudio, vllm or
 * compatible.
 */
provider: string, 
/**
 * Empty: the provider's default (or `ANTHROPIC_MODEL` / `OPENAI_MODEL`).
 */
model: string, 
/**
 * `None`: the provider's own (or its environment variable).
 */
base_url: string | null, 
/**
 * The mode new runs start in; the window can switch it mid-run.
 */
approval_mode: ApprovalPolicy, max_turns: number, 
/**
 * A monitor's index in `list_monitors`, as `deskhand monitors` numbers them; `None` is
 * the primary monitor.
 */
monitor: number | null, 
/**
 * The largest screenshot the model sees (the monitor's aspect ratio is kept); `None`
 * picks the reference sizes (1024x768, 1280x800, 1366x768) by aspect ratio.
 */
screenshot_size: Size | null, 
/**
 * How hard the model thinks (`low`, `medium`, `high`, `xhigh`, `max`), as `--effort`;
 * `None` is the provider's default. Absent in settings written before it existed.
 */
effort: string | null, };

/**
 * A task's update as the window is sent it: an event as it is, or a notice as
 * `{"type": "notice", "message": …}`. The end is not sent: a run's events end with `done`.
 */

export type WindowUpdate = { "type": "notice", message: string, } | AgentEvent;
