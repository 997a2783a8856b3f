// Characters that make text look different from what it is: bidi controls reorder what is
// shown (a command can read backwards from how it runs), zero-width characters and controls
// hide. On the approval card every one is shown as a visible escape, with a warning. The
// terminal prompt of the CLI escapes the same list.

/**
 * U+202A-U+202E and U+2066-U+2069 (bidi embeddings, overrides, isolates), U+200B-U+200F
 * (zero-width characters and direction marks), U+2060 (word joiner), U+FEFF (zero-width
 * no-break space), and the C0 and C1 controls but `\n` and `\t` (DEL included).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const INVISIBLE = /[\u202A-\u202E\u2066-\u2069\u200B-\u200F\u2060\uFEFF\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

export interface Shown {
  text: string;
  /** How many characters were replaced by escapes. */
  escaped: number;
}

/** `text` with every invisible character as `\u{hex}`, e.g. U+202E as `\u{202e}`. */
export function showInvisible(text: string): Shown {
  let escaped = 0;
  const shown = text.replace(INVISIBLE, (c) => {
    escaped += 1;
    return `\\u{${c.codePointAt(0)!.toString(16)}}`;
  });
  return { text: shown, escaped };
}
