// A long value on an approval is shown as its start, an ellipsis and its whole length, never
// cut silently; the card's "Show all" shows it whole. The core shortens its approval lines
// the same way (`visible::shortened`), at the same lengths.

/** The most characters of a typed text a card shows before it shortens it. */
export const TYPED_CHARS = 60;

/** The most characters of an element's name a card shows before it shortens it. */
export const NAME_CHARS = 80;

/**
 * `text` whole when it has at most `max` characters (code points, as the core counts them);
 * else its first `max`, "…" and its length: "abc… (1,234 characters)".
 */
export function shortened(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return `${chars.slice(0, max).join('')}… (${chars.length.toLocaleString('en-US')} characters)`;
}
