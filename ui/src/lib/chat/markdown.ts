// The assistant's Markdown as sanitized HTML. Model output is untrusted: everything goes
// through DOMPurify, and code blocks get a copy button the component wires up.
import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    code({ text, lang }: Tokens.Code): string {
      const language = lang ? ` data-lang="${escapeHtml(lang)}"` : '';
      return (
        `<div class="code-block"${language}>` +
        `<button type="button" class="copy-code">Copy</button>` +
        `<pre><code>${escapeHtml(text)}</code></pre></div>`
      );
    },
  },
});

export function renderMarkdown(source: string): string {
  const html = marked.parse(source, { async: false });
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
}
