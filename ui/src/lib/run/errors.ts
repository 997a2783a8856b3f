// Turns the core's one-line error messages into something a person can act on.
// The lines come from `ProviderError`'s Display: "<provider>: <what failed> (HTTP n): <detail>".

export type ErrorKind = 'no_key' | 'auth' | 'rate_limited' | 'overloaded' | 'network' | 'other';

export interface ErrorNotice {
  kind: ErrorKind;
  /** The message as the core sent it. */
  message: string;
  /** What to do about it. */
  advice: string;
}

const PATTERNS: [ErrorKind, RegExp][] = [
  ['no_key', /no api key|api key is not set|missing api key/i],
  ['auth', /authentication failed|invalid x-api-key|\b401\b/i],
  ['rate_limited', /rate limit|\b429\b/i],
  ['overloaded', /overloaded|\b529\b/i],
  ['network', /network error|could not connect|connection (refused|reset)|dns|timed out/i],
];

const ADVICE: Record<ErrorKind, string> = {
  no_key: 'Add an API key in Settings, then send again.',
  auth: 'The API key was refused. Check or replace it in Settings.',
  rate_limited: 'The provider is limiting requests. Wait a moment and send again.',
  overloaded: 'The model service is overloaded. Try again in a minute.',
  network: 'The network seems down. Check the connection and send again.',
  other: 'Send again to continue; the session is kept.',
};

export function errorKind(message: string): ErrorKind {
  return PATTERNS.find(([, pattern]) => pattern.test(message))?.[0] ?? 'other';
}

export function errorNotice(message: string, kind: ErrorKind = errorKind(message)): ErrorNotice {
  return { kind, message, advice: ADVICE[kind] };
}
