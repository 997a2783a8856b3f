import { render, screen } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';
import { CHUNK } from '../common/newestFirst.svelte';
import { initialRunState } from '../run/state';
import ChatView from './ChatView.svelte';

function session(messages: number) {
  const run = initialRunState();
  for (let i = 0; i < messages; i++) {
    run.chat.push({ key: i, role: i % 2 ? 'assistant' : 'user', blocks: [{ kind: 'text', text: `message ${i}` }], historyIndex: i });
  }
  return run;
}

describe('ChatView', () => {
  it('draws a reopened long session newest first, then the older messages a chunk per frame', async () => {
    const messages = 5 * CHUNK;
    let frames = 0;
    const raf = window.requestAnimationFrame.bind(window);
    vi.spyOn(window, 'requestAnimationFrame').mockImplementation((callback) => {
      frames += 1;
      return raf(callback);
    });
    render(ChatView, { run: session(messages), busy: false, onsend: vi.fn(), onsettings: vi.fn(), onselect: vi.fn() });

    // The first frame has only the newest chunk, ending with the last message.
    const first = screen.getAllByRole('article');
    expect(first).toHaveLength(CHUNK);
    expect(first.at(-1)).toHaveTextContent(`message ${messages - 1}`);

    // The rest follows, a chunk a frame, in order.
    await vi.waitFor(() => expect(screen.getAllByRole('article')).toHaveLength(messages));
    const all = screen.getAllByRole('article');
    expect(all[0]).toHaveTextContent('message 0');
    expect(all.at(-1)).toHaveTextContent(`message ${messages - 1}`);
    expect(frames).toBeGreaterThanOrEqual(messages / CHUNK - 1);
  });

  it('shows streaming thinking as one quiet line, not as the answer', () => {
    const run = session(1);
    run.thinking = 'First I look.\nThen I click the button.\n';
    render(ChatView, { run, busy: true, onsend: vi.fn(), onsettings: vi.fn(), onselect: vi.fn() });
    const line = screen.getByLabelText('Deskhand (thinking)');
    expect(line).toHaveTextContent('Then I click the button.');
    expect(line).not.toHaveTextContent('First I look.');
    expect(screen.queryByLabelText('Deskhand (typing)')).toBeNull();
  });

  it('draws a short conversation at once', () => {
    render(ChatView, { run: session(3), busy: false, onsend: vi.fn(), onsettings: vi.fn(), onselect: vi.fn() });
    expect(screen.getAllByRole('article')).toHaveLength(3);
  });
});
