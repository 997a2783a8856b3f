// The model's thinking, shown folded: its newest line is the progress (Claude 5 models put the
// text between their tool calls there), the whole text opens on demand.

/** The newest non-blank line of `text`. */
export function lastLine(text: string): string {
  const lines = text.split('\n').filter((line) => line.trim());
  return lines.at(-1) ?? '';
}
