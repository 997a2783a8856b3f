// What the window advises when a request failed. The core sends the failure's kind with its
// message (`llm::ErrorKind`), so nothing here reads the wording.
import type { ErrorKind } from '../types';

export type NoticeKind = 'no_key' | 'auth' | 'rate_limited' | 'overloaded' | 'network' | 'other';

export interface ErrorNotice {
  kind: NoticeKind;
  /** The message as the core sent it. */
  message: string;
  /** What to do about it. */
  advice: string;
}

const ADVICE: Record<NoticeKind, string> = {
  no_key: 'Add an API key in Settings, then send again.',
  auth: 'The API key was refused. Check or replace it in Settings.',
  rate_limited: 'The provider is limiting requests. Wait a moment and send again.',
  overloaded: 'The model service is overloaded. Try again in a minute.',
  network: 'The network seems down. Check the connection and send again.',
  other: 'Send again to continue; the session is kept.',
};

/** The notice for a core error kind: one with its own advice (the four core kinds that are
 * notice kinds too), else 'other', as for events stored before kinds. */
export function noticeKind(kind?: ErrorKind | null): NoticeKind {
  return kind && kind in ADVICE ? (kind as NoticeKind) : 'other';
}

export function errorNotice(message: string, kind: NoticeKind = 'other'): ErrorNotice {
  return { kind, message, advice: ADVICE[kind] };
}
