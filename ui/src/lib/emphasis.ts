// The one markup of action summaries, as the core writes it (`deskhand_protocol::emphasis`):
// `**strong**` around a name that came from the screen ("Click **7** (toggle button) in
// galculator"), and a backslash before a `*` or `\` that is part of the text. Every place the
// window shows a summary draws it with `Emphasized.svelte` (text nodes, so a name can never
// become HTML) or as `plain` text where only a string fits (a label, a title).

/** A piece of a summary: text, shown strong or not. Story lines add `code` (a command, a typed text). */
export interface Span {
  text: string;
  strong?: boolean;
  code?: boolean;
}

const PUNCTUATION = /[!-/:-@[-`{-~]/;

/** Whether an unescaped `**` follows `from`. */
function closes(text: string, from: number): boolean {
  for (let i = from; i < text.length; i++) {
    if (text[i] === '\\' && PUNCTUATION.test(text[i + 1] ?? '')) i += 1;
    else if (text.startsWith('**', i)) return true;
  }
  return false;
}

/** The spans of a summary, in order. A `**` without a closing one is text. */
export function spans(summary: string): Span[] {
  const out: Span[] = [];
  let current = '';
  let strong = false;
  const push = () => {
    if (current) out.push(strong ? { text: current, strong: true } : { text: current });
    current = '';
  };
  for (let i = 0; i < summary.length; ) {
    const next = summary[i + 1] ?? '';
    if (summary[i] === '\\' && PUNCTUATION.test(next)) {
      current += next;
      i += 2;
    } else if (summary.startsWith('**', i)) {
      if (strong || closes(summary, i + 2)) {
        push();
        strong = !strong;
      } else {
        current += '**';
      }
      i += 2;
    } else {
      current += summary[i];
      i += 1;
    }
  }
  push();
  return out;
}

/** A summary as plain text, without its markup. */
export function plain(summary: string): string {
  return spans(summary)
    .map((span) => span.text)
    .join('');
}

/** A name as the core escapes it in a summary (for building one, as tests do). */
export function escape(text: string): string {
  return text.replace(/[\\*]/g, (c) => `\\${c}`);
}
