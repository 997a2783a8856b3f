// Generated from the #[tauri::command] functions in src-tauri/src/commands by
// src-tauri/src/bindings.rs: do not edit. To change a command, change it in Rust and run
// `DESKHAND_BLESS_TYPES=1 cargo test -p deskhand-app --lib typescript`. The page calls these
// through ipc.ts.
import { invoke, type Channel } from '@tauri-apps/api/core';
import type { ApprovalPolicy, AttachedImage, AttachmentRef, Decision, DesktopChoice, KeyInfo, LoadedSession, MonitorInfo, Note, ProviderInfo, SavedCheck, Schedule, SessionHit, SessionSummary, StallAnswer, TakeOverInput, TaskInfo, Watching, WindowSettings, WindowUpdate } from './types';

/**
 * Where the session's runs work; the person's screen until set.
 */
export function getSessionDesktop(id: string): Promise<DesktopChoice> {
  return invoke<DesktopChoice>('get_session_desktop', { id });
}

/**
 * Saves where the session's later runs work. A desktop the session kept ends once the
 * choice no longer keeps one (or, if a run is on it, with that run).
 */
export function setSessionDesktop(id: string, choice: DesktopChoice): Promise<void> {
  return invoke<void>('set_session_desktop', { id, choice });
}

/**
 * Shows the session's agent desktop: JPEG frames (raw bytes, no JSON) go to `on_frame`, the
 * first at once and then one after each change, at most 10 a second. One view at a time:
 * a new one replaces the last. `not_found` while the session has no agent desktop.
 */
export function watchAgentDesktop(sessionId: string, maxWidth: number, onFrame: Channel<ArrayBuffer>): Promise<Watching> {
  return invoke<Watching>('watch_agent_desktop', { sessionId, maxWidth, onFrame });
}

/**
 * Stops the live view (the panel closed it, or the run ended).
 */
export function unwatchAgentDesktop(): Promise<void> {
  return invoke<void>('unwatch_agent_desktop');
}

/**
 * One click, scroll, key or text of the person, in the desktop's pixels, sent to the
 * session's agent desktop only. `not_found` while it has none; unknown keys are `invalid`.
 */
export function takeOverInput(sessionId: string, input: TakeOverInput): Promise<void> {
  return invoke<void>('take_over_input', { sessionId, input });
}

/**
 * An image's encoded bytes as a binary response (an `ArrayBuffer` in the webview):
 * attachments not yet sent from where they are held, every other image from the store, which
 * keeps each one before the window is shown an event naming it.
 */
export function getImage(sha256: string): Promise<ArrayBuffer> {
  return invoke<ArrayBuffer>('get_image', { sha256 });
}

/**
 * Attaches an image sent as the raw request body (a file, a paste or a drop).
 */
export function attachImage(body: ArrayBuffer | Uint8Array): Promise<AttachedImage> {
  return invoke<AttachedImage>('attach_image', body);
}

export function discardAttachment(id: string): Promise<void> {
  return invoke<void>('discard_attachment', { id });
}

/**
 * Captures the configured monitor now, scaled as for the model, as an attachment (the
 * window shows it as a thumbnail that can be removed before sending). The window steps aside
 * for the instant of the capture: the person wants what they are working on, not Deskhand.
 */
export function captureScreen(): Promise<AttachedImage> {
  return invoke<AttachedImage>('capture_screen');
}

/**
 * Opens `url` (http, https or mailto) in the system browser once the person confirms it.
 */
export function openLink(url: string): Promise<void> {
  return invoke<void>('open_link', { url });
}

/**
 * Every note, the most recently changed first.
 */
export function listNotes(): Promise<Note[]> {
  return invoke<Note[]>('list_notes');
}

/**
 * Notes holding every word of `query`, best match first.
 */
export function searchNotes(query: string): Promise<Note[]> {
  return invoke<Note[]>('search_notes', { query });
}

/**
 * A note the person wrote; `invalid` for an empty note, one over 4 KB, or one holding a
 * secret.
 */
export function addNote(text: string): Promise<Note> {
  return invoke<Note>('add_note', { text });
}

export function editNote(id: number, text: string): Promise<Note> {
  return invoke<Note>('edit_note', { id, text });
}

export function deleteNote(id: number): Promise<void> {
  return invoke<void>('delete_note', { id });
}

/**
 * Whether each run's system prompt holds the notes most relevant to it (on by default).
 */
export function getMemoryInPrompt(): Promise<boolean> {
  return invoke<boolean>('get_memory_in_prompt');
}

export function setMemoryInPrompt(enabled: boolean): Promise<void> {
  return invoke<void>('set_memory_in_prompt', { enabled });
}

/**
 * Starts a run and resolves with its session id; the run goes on in the background and
 * every event goes to `on_event`, the last being `done`. `check` and `desktop`, what the
 * person chose, are saved with the session by the engine (a stored session's own saved ones
 * apply otherwise, as for every front end).
 */
export function sendMessage(sessionId: string | null, text: string, attachments: AttachmentRef[], check: SavedCheck | null, desktop: DesktopChoice | null, onEvent: Channel<WindowUpdate>): Promise<string> {
  return invoke<string>('send_message', { sessionId, text, attachments, check, desktop, onEvent });
}

/**
 * Answers the pending approval of `tool_use_id`, and only that one: `not_found` for any id
 * that is not waiting. "Always allow" for bash needs the person's native confirmation.
 */
export function approve(toolUseId: string, decision: Decision): Promise<void> {
  return invoke<void>('approve', { toolUseId, decision });
}

/**
 * Answers the running task's stall question: go on, go on with a hint, or stop.
 * `not_found` when nothing is asking.
 */
export function answerStall(answer: StallAnswer): Promise<void> {
  return invoke<void>('answer_stall', { answer });
}

/**
 * Stops the run: the core answers open calls and ends with `done` (cancelled).
 */
export function stop(): Promise<void> {
  return invoke<void>('stop');
}

/**
 * Switches the mode; Auto needs the person's native confirmation.
 */
export function setApprovalMode(mode: ApprovalPolicy): Promise<void> {
  return invoke<void>('set_approval_mode', { mode });
}

export function listSessions(): Promise<SessionSummary[]> {
  return invoke<SessionSummary[]>('list_sessions');
}

export function searchSessions(query: string): Promise<SessionHit[]> {
  return invoke<SessionHit[]>('search_sessions', { query });
}

export function renameSession(id: string, title: string): Promise<void> {
  return invoke<void>('rename_session', { id, title });
}

/**
 * Deletes a session with its screenshots; not the one running, whose events are still
 * being written.
 */
export function deleteSession(id: string): Promise<void> {
  return invoke<void>('delete_session', { id });
}

/**
 * Writes the session to a new file in the Downloads folder (the home folder where there is
 * none) and answers its path. No save dialog: the webview has no file system access and
 * a native dialog would block the window's WebDriver tests; the path is shown instead.
 */
export function exportSession(id: string, format: string): Promise<string> {
  return invoke<string>('export_session', { id, format });
}

/**
 * A stored session with its messages and events, images as references (`get_image`).
 */
export function loadSession(id: string): Promise<LoadedSession> {
  return invoke<LoadedSession>('load_session', { id });
}

/**
 * The check saved with a session (its settings in the window), or `null`.
 */
export function getSessionCheck(id: string): Promise<SavedCheck | null> {
  return invoke<SavedCheck | null>('get_session_check', { id });
}

/**
 * Saves the check every later run of the session ends with (`null` removes it). It is
 * refused at once when its program does not exist or its timeout is out of range.
 */
export function setSessionCheck(id: string, check: SavedCheck | null): Promise<void> {
  return invoke<void>('set_session_check', { id, check });
}

/**
 * The window's settings with the run budget and set-of-marks from the store.
 */
export function getSettings(): Promise<WindowSettings> {
  return invoke<WindowSettings>('get_settings');
}

/**
 * Validates and stores the settings (the budget and set-of-marks in the store, where
 * `deskhand settings` keeps them and every run reads them); the approval mode becomes the window's mode too. Two changes need the person's
 * native confirmation first (`declined` otherwise): a new base URL for a provider that has
 * a key (the key goes wherever the base URL points), and Auto as the mode.
 */
export function setSettings(settings: WindowSettings): Promise<WindowSettings> {
  return invoke<WindowSettings>('set_settings', { settings });
}

export function listProviders(): Promise<ProviderInfo[]> {
  return invoke<ProviderInfo[]>('list_providers');
}

/**
 * The monitors the computer tool can use, as the core lists them.
 */
export function listMonitors(): Promise<MonitorInfo[]> {
  return invoke<MonitorInfo[]>('list_monitors');
}

/**
 * Stores the key in the OS keyring; answers what the window may know of it.
 */
export function setApiKey(provider: string, key: string): Promise<KeyInfo> {
  return invoke<KeyInfo>('set_api_key', { provider, key });
}

/**
 * Whether `provider` (default: the configured one) has a key, where from, and its last
 * four characters.
 */
export function keyStatus(provider: string | null): Promise<KeyInfo> {
  return invoke<KeyInfo>('key_status', { provider });
}

/**
 * Running and waiting tasks of every process, and the newest finished ones, newest first.
 */
export function listTasks(): Promise<TaskInfo[]> {
  return invoke<TaskInfo[]>('list_tasks');
}

/**
 * The schedules `deskhand serve` runs, by name, as the history holds them (the window
 * shows them; `deskhand schedule` and the local API change them).
 */
export function listSchedules(): Promise<Schedule[]> {
  return invoke<Schedule[]>('list_schedules');
}

/**
 * Follows a task: its events so far, then the rest live, to `on_event` (a task another
 * process runs is followed through the store). Resolves at once with the task.
 */
export function watchTask(taskId: string, onEvent: Channel<WindowUpdate>): Promise<TaskInfo> {
  return invoke<TaskInfo>('watch_task', { taskId, onEvent });
}
