import { render, screen } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';
import { CHUNK } from '../common/newestFirst.svelte';
import { applyEvent } from '../run/reduce';
import { initialRunState } from '../run/state';
import type { AgentEvent } from '../types';
import { message, toolCall, toolResult, userText } from '../../test/events';
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

  it('shows streaming thinking folded: its newest line, the rest on demand, not as the answer', () => {
    const run = session(1);
    run.thinking = 'First I look.\nThen I click the button.\n';
    render(ChatView, { run, busy: true, onsend: vi.fn(), onsettings: vi.fn(), onselect: vi.fn() });
    const thinking = screen.getByLabelText('Deskhand (thinking)') as HTMLDetailsElement;
    expect(thinking.tagName).toBe('DETAILS');
    expect(thinking.open).toBe(false);
    const line = thinking.querySelector('summary');
    expect(line).toHaveTextContent('Then I click the button.');
    expect(line).not.toHaveTextContent('First I look.');
    expect(thinking).toHaveTextContent('First I look. Then I click the button.');
    expect(screen.queryByLabelText('Deskhand (typing)')).toBeNull();
  });

  it('draws a short conversation at once', () => {
    render(ChatView, { run: session(3), busy: false, onsend: vi.fn(), onsettings: vi.fn(), onselect: vi.fn() });
    expect(screen.getAllByRole('article')).toHaveLength(3);
  });

  it('keeps the progress of an Opus 5.5-shaped stream in view between its tool calls', () => {
    // Opus 5.5 writes no text between its tool calls: its progress comes inside thinking.
    const thinkingDelta = (text: string): AgentEvent => ({ type: 'thinking_delta', text });
    const run = initialRunState();
    const events: AgentEvent[] = [
      {
        type: 'started',
        session_id: 's1',
        provider: 'Anthropic',
        model: 'claude-opus-5-5',
        price_source: 'official',
        warnings: ['claude-opus-4-5 may be retired'],
      },
      userText('look twice'),
      thinkingDelta('Listing the folder '),
      thinkingDelta('first.'),
      message({
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Listing the folder first.', signature: 's1' },
          { type: 'tool_use', id: 't1', name: 'bash', input: { command: 'ls' } },
        ],
      }),
      toolCall('t1', 'bash', { command: 'ls' }),
      toolResult('t1', { name: 'bash', text: 'a.txt' }),
      thinkingDelta('Now the second look.'),
    ];
    for (const event of events) applyEvent(run, event, 1_000);
    render(ChatView, { run, busy: true, onsend: vi.fn(), onsettings: vi.fn(), onselect: vi.fn() });
    // The finished step's progress is its folded block's line; the next one streams below it.
    const folded = screen.getAllByRole('group').find((d) => d.classList.contains('thinking'));
    expect(folded?.querySelector('summary')).toHaveTextContent('Listing the folder first.');
    expect(screen.getByLabelText('Deskhand (thinking)').querySelector('summary')).toHaveTextContent(
      'Now the second look.',
    );
    expect(screen.getByRole('status')).toHaveTextContent('claude-opus-4-5 may be retired');
  });
});
