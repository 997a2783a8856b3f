// Every call from the webview to the Tauri shell goes through this module; components never
// call `invoke` themselves. Each command's typed call is generated from its Rust signature
// (./commands.ts); this module adds what the page needs around some of them (callbacks for
// channels, defaults, narrower types). The contract is docs/ipc.md.
import { Channel } from '@tauri-apps/api/core';
import * as commands from './commands';
import type {
  AttachmentRef,
  DesktopChoice,
  IpcError,
  KeyInfo,
  SavedCheck,
  StallAnswer,
  Watching,
  WindowUpdate,
} from './types';

// The IPC's types are generated from the Rust ones; they are imported from here or from there.
export type * from './types';

export {
  addNote,
  approve,
  attachImage,
  captureScreen,
  deleteNote,
  deleteSession,
  discardAttachment,
  editNote,
  getImage,
  getMemoryInPrompt,
  getSessionCheck,
  getSessionDesktop,
  getSettings,
  listMonitors,
  listNotes,
  listProviders,
  listSessions,
  listSchedules,
  listTasks,
  loadSession,
  openLink,
  renameSession,
  searchNotes,
  searchSessions,
  setApiKey,
  setApprovalMode,
  setMemoryInPrompt,
  setSessionCheck,
  setSessionDesktop,
  setSettings,
  stop,
  takeOverInput,
  unwatchAgentDesktop,
} from './commands';

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
  return commands.sendMessage(sessionId, text, attachments, check, desktop, channel);
}

export const DEFAULT_DESKTOP: DesktopChoice = { agent: false, sandbox: true, keep: false };

/**
 * Shows the session's agent desktop: each frame (a JPEG, raw bytes) goes to `onFrame`.
 * `not_found` while the session has no agent desktop.
 */
export function watchAgentDesktop(
  sessionId: string,
  maxWidth: number,
  onFrame: (jpeg: ArrayBuffer) => void,
): Promise<Watching> {
  return commands.watchAgentDesktop(sessionId, maxWidth, new Channel<ArrayBuffer>(onFrame));
}

/** Answers the running task's stall question; `not_found` when nothing is asking. */
export function answerStall(answer: Exclude<StallAnswer, { answer: 'no_one' }>): Promise<void> {
  return commands.answerStall(answer);
}

/** Writes the export to a new file in the Downloads folder; resolves with its path. */
export function exportSession(id: string, format: 'markdown' | 'json'): Promise<string> {
  return commands.exportSession(id, format);
}

/** The key status of `provider`, else of the configured provider. */
export function keyStatus(provider?: string): Promise<KeyInfo> {
  return commands.keyStatus(provider || null);
}
