// Every call from the webview to the Tauri shell goes through this module; components never
// call `invoke` themselves. The contract is docs/ipc.md.
import { Channel, invoke } from '@tauri-apps/api/core';
import type {
  ApprovalPolicy,
  AttachedImage,
  AttachmentRef,
  Decision,
  DesktopChoice,
  IpcError,
  KeyInfo,
  LoadedSession,
  MonitorInfo,
  Note,
  ProviderInfo,
  SavedCheck,
  SessionHit,
  SessionSummary,
  StallAnswer,
  TakeOverInput,
  TaskInfo,
  Watching,
  WindowSettings,
  WindowUpdate,
} from './types';

// The IPC's types are generated from the Rust ones; they are imported from here or from there.
export type * from './types';

/** Commands reject with an `IpcError`; anything else (a bare string) is normalized to one. */
export function toIpcError(error: unknown): IpcError {
  if (typeof error === 'object' && error !== null && 'kind' in error && 'message' in error) {
    return error as IpcError;
  }
  return { kind: 'internal', message: error instanceof Error ? error.message : String(error) };
}

/**
 * Starts a run; resolves with its session id once it has started. Its events, and notices
 * about it, stream to `onEvent`. `check` is for a new session (`sessionId` null): it checks
 * this run and is saved with it.
 */
export function sendMessage(
  sessionId: string | null,
  text: string,
  attachments: AttachmentRef[],
  onEvent: (update: WindowUpdate) => void,
  check: SavedCheck | null = null,
  desktop: DesktopChoice | null = null,
): Promise<string> {
  const channel = new Channel<WindowUpdate>(onEvent);
  return invoke<string>('send_message', { sessionId, text, attachments, check, desktop, onEvent: channel });
}

export const DEFAULT_DESKTOP: DesktopChoice = { agent: false, sandbox: true, keep: false };

export function getSessionDesktop(id: string): Promise<DesktopChoice> {
  return invoke<DesktopChoice>('get_session_desktop', { id });
}

export function setSessionDesktop(id: string, choice: DesktopChoice): Promise<void> {
  return invoke('set_session_desktop', { id, choice });
}

/**
 * Shows the session's agent desktop: each frame (a JPEG, raw bytes) goes to `onFrame`.
 * `not_found` while the session has no agent desktop.
 */
export function watchAgentDesktop(
  sessionId: string,
  maxWidth: number,
  onFrame: (jpeg: ArrayBuffer) => void,
): Promise<Watching> {
  const channel = new Channel<ArrayBuffer>(onFrame);
  return invoke<Watching>('watch_agent_desktop', { sessionId, maxWidth, onFrame: channel });
}

export function unwatchAgentDesktop(): Promise<void> {
  return invoke('unwatch_agent_desktop');
}

export function takeOverInput(sessionId: string, input: TakeOverInput): Promise<void> {
  return invoke('take_over_input', { sessionId, input });
}

/** Answers the running task's stall question; `not_found` when nothing is asking. */
export function answerStall(answer: Exclude<StallAnswer, { answer: 'no_one' }>): Promise<void> {
  return invoke('answer_stall', { answer });
}

/** The check saved with a session, or null. */
export function getSessionCheck(id: string): Promise<SavedCheck | null> {
  return invoke<SavedCheck | null>('get_session_check', { id });
}

/** Saves (null: removes) a session's check; `invalid` when its program does not exist. */
export function setSessionCheck(id: string, check: SavedCheck | null): Promise<void> {
  return invoke('set_session_check', { id, check });
}

export function approve(toolUseId: string, decision: Decision): Promise<void> {
  return invoke('approve', { toolUseId, decision });
}

/**
 * Opens a link from a reply in the system browser, after the shell's native confirmation
 * showing the full URL; rejects with `declined` when the person says no.
 */
export function openLink(url: string): Promise<void> {
  return invoke('open_link', { url });
}

export function stop(): Promise<void> {
  return invoke('stop');
}

export function setApprovalMode(mode: ApprovalPolicy): Promise<void> {
  return invoke('set_approval_mode', { mode });
}

export function captureScreen(): Promise<AttachedImage> {
  return invoke<AttachedImage>('capture_screen');
}

/** Sends the file's bytes as the raw request body, not as JSON. */
export function attachImage(bytes: Uint8Array): Promise<AttachedImage> {
  return invoke<AttachedImage>('attach_image', bytes);
}

export function discardAttachment(id: string): Promise<void> {
  return invoke('discard_attachment', { id });
}

/** An image's encoded bytes, sent by the shell as a binary response. */
export function getImage(sha256: string): Promise<ArrayBuffer> {
  return invoke<ArrayBuffer>('get_image', { sha256 });
}

export function listSessions(): Promise<SessionSummary[]> {
  return invoke<SessionSummary[]>('list_sessions');
}

export function searchSessions(query: string): Promise<SessionHit[]> {
  return invoke<SessionHit[]>('search_sessions', { query });
}

export function renameSession(id: string, title: string): Promise<void> {
  return invoke('rename_session', { id, title });
}

export function deleteSession(id: string): Promise<void> {
  return invoke('delete_session', { id });
}

/** Writes the export to a new file in the Downloads folder; resolves with its path. */
export function exportSession(id: string, format: 'markdown' | 'json'): Promise<string> {
  return invoke<string>('export_session', { id, format });
}

export function loadSession(id: string): Promise<LoadedSession> {
  return invoke<LoadedSession>('load_session', { id });
}

/** Tasks of every process (the window, `deskhand ask`, `deskhand serve`), newest first. */
export function listTasks(): Promise<TaskInfo[]> {
  return invoke<TaskInfo[]>('list_tasks');
}

export function getSettings(): Promise<WindowSettings> {
  return invoke<WindowSettings>('get_settings');
}

export function setSettings(settings: WindowSettings): Promise<WindowSettings> {
  return invoke<WindowSettings>('set_settings', { settings });
}

export function listMonitors(): Promise<MonitorInfo[]> {
  return invoke<MonitorInfo[]>('list_monitors');
}

export function listProviders(): Promise<ProviderInfo[]> {
  return invoke<ProviderInfo[]>('list_providers');
}

export function setApiKey(provider: string, key: string): Promise<KeyInfo> {
  return invoke<KeyInfo>('set_api_key', { provider, key });
}

/** The key status of `provider`, else of the configured provider. */
export function keyStatus(provider?: string): Promise<KeyInfo> {
  return invoke<KeyInfo>('key_status', provider ? { provider } : {});
}

/** The agent's notes, the most recently changed first. */
export function listNotes(): Promise<Note[]> {
  return invoke<Note[]>('list_notes');
}

export function searchNotes(query: string): Promise<Note[]> {
  return invoke<Note[]>('search_notes', { query });
}

/** Rejects with `invalid` for an empty note, one over 4 KB, or one holding a secret. */
export function addNote(text: string): Promise<Note> {
  return invoke<Note>('add_note', { text });
}

export function editNote(id: number, text: string): Promise<Note> {
  return invoke<Note>('edit_note', { id, text });
}

export function deleteNote(id: number): Promise<void> {
  return invoke('delete_note', { id });
}

/** Whether each run's system prompt holds the notes most relevant to it. */
export function getMemoryInPrompt(): Promise<boolean> {
  return invoke<boolean>('get_memory_in_prompt');
}

export function setMemoryInPrompt(enabled: boolean): Promise<void> {
  return invoke('set_memory_in_prompt', { enabled });
}
