import { describe, expect, it } from 'vitest';
import { renderMarkdown } from './markdown';

describe('renderMarkdown', () => {
  it('renders Markdown and wraps code blocks with a copy button', () => {
    const html = renderMarkdown('**bold**\n\n```sh\necho "<hi>"\n```');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<button type="button" class="copy-code">Copy</button>');
    expect(html).toContain('<code>echo "&lt;hi&gt;"</code>');
  });

  it('removes scripts and event handlers from model output', () => {
    const html = renderMarkdown('<img src="x" onerror="alert(1)"><script>alert(2)</script>[a](javascript:alert(3))');
    expect(html).not.toMatch(/onerror|<script|javascript:/);
  });
});
