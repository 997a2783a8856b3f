import { screen, waitFor, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { runningApp } from '../../test/app';
import { approvalRequest, done, image, message, started, toolCall, toolResult, userText } from '../../test/events';
import { escape } from '../emphasis';
import type { AgentEvent, Target } from '../types';

const HOSTILE = '<img src=x onerror=alert(1)> **7**';
const target: Target = { known: true, name: HOSTILE, role: 'toggle button', app: 'galculator', sensitive: false };
const click = { action: 'left_click', coordinate: [10, 20] };

/** The model's calls, as the assistant's message and the core's tool_call events. */
function calls(...ids: [string, unknown][]): AgentEvent[] {
  return [
    message({ role: 'assistant', content: ids.map(([id, input]) => ({ type: 'tool_use', id, name: 'computer', input })) }),
    ...ids.map(([id, input]) => toolCall(id, 'computer', input)),
  ];
}

describe('the chat as a story', () => {
  it('tells each step in words with its thumbnail and outcome, names from the screen as text, never markup', async () => {
    const { emit } = await runningApp('add one');
    emit(started(), userText('add one'), ...calls(['t1', { action: 'screenshot' }], ['t2', click]));
    emit(toolResult('t1', { images: [image('first')] }));
    emit({
      type: 'approval_needed',
      request: approvalRequest('t2', {
        input: click,
        target,
        summary: `Click **${escape(HOSTILE)}** (toggle button) in galculator`,
      }),
    });

    // The approval card's title: the name strong, as text.
    const card = await screen.findByRole('region', { name: 'Approval needed' });
    const title = card.querySelector('.summary')!;
    expect(title.textContent).toBe(`Click ${HOSTILE} (toggle button) in galculator`);
    expect(title.querySelector('strong')?.textContent).toBe(HOSTILE);

    emit({ type: 'approval_decided', id: 't2', decision: 'approve', by: 'window' });
    emit(toolResult('t2', { images: [image('second')], changed: false }));
    emit(done('done'));

    const chat = screen.getByRole('main', { name: 'Conversation' });
    const lines = await within(chat).findAllByTestId('story-line');
    expect(lines.map((l) => l.textContent?.replace(/\s+/g, ' ').trim())).toEqual([
      'Took a screenshot done',
      `Clicked ${HOSTILE} in galculator changed nothing`,
    ]);
    expect(lines[1]!.querySelector('strong')?.textContent).toBe(HOSTILE);
    expect(lines.map((l) => l.dataset.outcome)).toEqual(['done', 'no_change']);
    // Each line has its step's screenshot.
    await waitFor(() => expect(lines.every((l) => l.querySelector('img'))).toBe(true));
    // Nothing from the screen became an element, nor markdown syntax.
    expect(document.querySelector('img[src="x"]')).toBeNull();
    expect(document.body.textContent).not.toContain('**7**** (toggle');

    // A click on a line shows that step in the side panel.
    await userEvent.click(lines[1]!);
    const panel = screen.getByRole('complementary', { name: 'Agent activity' });
    await waitFor(() => expect(panel.querySelector('[aria-current="step"]')?.getAttribute('data-step-id')).toBe('t2'));
    const timelineTitle = panel.querySelector('[data-step-id="t2"] .title')!;
    expect(timelineTitle.querySelector('strong')?.textContent).toBe(HOSTILE);

    // The run's end: its badge with the final screenshot.
    const end = within(chat).getByTestId('run-end');
    expect(end).toHaveTextContent('Done');
    expect(within(end).getByAltText('The final screen')).toBeInTheDocument();
  });
});
