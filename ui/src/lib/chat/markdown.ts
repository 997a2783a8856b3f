// The assistant's Markdown as sanitized HTML. Model output is untrusted (a page the agent
// read can write it): raw HTML in it is shown as text, never rendered, so a reply cannot
// imitate the app's own parts (a code block with hidden text, a form, a dialog); DOMPurify
// still checks what marked makes; and input that would make marked slow or overflow its
// stack is shown as plain text instead.
import DOMPurify from 'dompurify';
import { Marked, Tokenizer, type Tokens } from 'marked';

/** The most characters rendered as Markdown; the rest of a longer reply is plain text. */
export const MARKDOWN_LIMIT = 32_000;
/** Nested quotes and list markers at the start of a line beyond this: plain text. */
export const MAX_NESTING = 32;
/**
 * How far marked looks ahead from each position for the end of an emphasis, a
 * strikethrough, plain text or a bare URL. It looked to the end of the reply from every `*`
 * or `_`, which is quadratic: 17,000 `x *` took 24 s to render. An emphasis longer
 * than this is shown with its markers; a longer bare URL is cut where it stops being a link.
 */
const LOOKAHEAD = 200;
const URL_LOOKAHEAD = 2_000;

/** One rendered reply: the HTML, and the exact text of each fenced block, for its Copy. */
export interface RenderedMarkdown {
  html: string;
  /** Indexed by the `data-code` of the block's Copy button. */
  codes: string[];
  /** What was not rendered as Markdown (too long, too deep, or marked failed), as text. */
  plain: string;
}

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

/**
 * Where a code block's Copy button goes, added after sanitizing (the sanitizer removes every
 * button). A private-use character, taken out of the model's text before parsing.
 */
const COPY_MARK = '\u{F8FF}';

/** The fences of the reply being rendered; marked renders synchronously, one reply at a time. */
let codes: string[] = [];

const { emStrong, del, inlineText, url } = Tokenizer.prototype;

const marked = new Marked({
  gfm: true,
  async: false,
  tokenizer: {
    emStrong(src: string, maskedSrc: string, prevChar?: string) {
      // `maskedSrc` is the whole text masked; its tail lines up with `src`.
      const from = maskedSrc.length - src.length;
      return emStrong.call(this, src.slice(0, LOOKAHEAD), maskedSrc.slice(from, from + LOOKAHEAD), prevChar);
    },
    del(src: string) {
      return del.call(this, src.slice(0, LOOKAHEAD));
    },
    inlineText(src: string) {
      return inlineText.call(this, src.slice(0, LOOKAHEAD));
    },
    url(src: string) {
      return url.call(this, src.slice(0, URL_LOOKAHEAD));
    },
  },
  renderer: {
    code({ text, lang }: Tokens.Code): string {
      const language = lang ? ` data-lang="${escapeHtml(lang)}"` : '';
      codes.push(text);
      return (
        `<div class="code-block"${language}>${COPY_MARK}${codes.length - 1}${COPY_MARK}` +
        `<pre><code>${escapeHtml(text)}</code></pre></div>`
      );
    },
    // Raw HTML from the model, block or inline, is text (a block of it, a paragraph).
    html(token: Tokens.HTML | Tokens.Tag): string {
      const text = escapeHtml(token.text);
      return 'block' in token && token.block ? `<p>${text}</p>\n` : text;
    },
    checkbox({ checked }: Tokens.Checkbox): string {
      return checked ? '☑ ' : '☐ ';
    },
  },
});

/**
 * Nothing a reply can use to cover, replace or drive the window: no forms or their controls
 * (a form's submit navigates), no dialogs or popovers (they sit above the app and turn off
 * its Esc), no frames, objects or styles.
 */
const SANITIZE = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: [
    'form',
    'input',
    'button',
    'select',
    'option',
    'textarea',
    'dialog',
    'details',
    'iframe',
    'object',
    'embed',
    'style',
    'base',
    'meta',
    'link',
  ],
  FORBID_ATTR: ['popover', 'popovertarget', 'popovertargetaction', 'style', 'formaction', 'form', 'tabindex'],
};

/** The deepest nesting of quote and list markers at the start of any line. */
function nestingDepth(source: string): number {
  let deepest = 0;
  for (const line of source.split('\n')) {
    const prefix = /^(?:[ \t]*(?:>|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t])))*/.exec(line)?.[0] ?? '';
    const depth = (prefix.match(/>|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t])/g) ?? []).length;
    deepest = Math.max(deepest, depth);
  }
  return deepest;
}

export function renderMarkdown(source: string): RenderedMarkdown {
  const head = source.slice(0, MARKDOWN_LIMIT);
  const rest = source.slice(MARKDOWN_LIMIT);
  if (nestingDepth(head) > MAX_NESTING) return { html: '', codes: [], plain: source };
  codes = [];
  try {
    const parsed = marked.parse(head.replaceAll(COPY_MARK, '\uFFFD'), { async: false });
    const html = DOMPurify.sanitize(parsed, SANITIZE).replace(
      new RegExp(`${COPY_MARK}(\\d+)${COPY_MARK}`, 'g'),
      (_, index: string) => `<button type="button" class="copy-code" data-code="${index}">Copy</button>`,
    );
    return { html, codes, plain: rest };
  } catch {
    return { html: '', codes: [], plain: source };
  } finally {
    codes = [];
  }
}
