import { screen, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import { approvalRequest, image, started, toolCall, toolResult, usage } from '../../test/events';
import { sidePanel } from '../../test/panel';
import type { AgentEvent } from '../types';

const child = (task: string, event: AgentEvent): AgentEvent => ({ type: 'child_event', task, event });

const panel = sidePanel;

describe('a delegated task in the side panel', () => {
  it('is a nested timeline of its own, with its status, cost and newest screenshot', async () => {
    panel(
      started(),
      toolCall('p1', 'delegate', { prompt: 'open the invoice', to: 'local' }),
      child('0123456789abcdef', started()),
      child('0123456789abcdef', toolCall('c1', 'bash', { command: 'ls' })),
      child('0123456789abcdef', toolResult('c1', { name: 'bash', text: 'invoice.pdf' })),
      child('0123456789abcdef', toolCall('c2', 'computer', { action: 'screenshot' })),
      child('0123456789abcdef', toolResult('c2', { images: [image('c'.repeat(64))] })),
      child('0123456789abcdef', {
        type: 'done',
        status: 'done',
        turns: 2,
        session_id: 's2',
        usage: usage(10, 2),
        cost_usd: 0.0123,
      }),
    );
    const section = screen.getByRole('region', { name: 'Delegated task 01234567' });
    expect(section).toHaveTextContent('done');
    expect(section).toHaveTextContent('$0.0123');
    const nested = within(section).getByRole('list', { name: 'Actions' });
    expect(within(nested).getAllByRole('listitem')).toHaveLength(2);
    expect(await within(section).findByAltText("The delegated task's screen")).toBeInTheDocument();
    // The parent's own timeline has only its delegate call.
    const timelines = screen.getAllByRole('list', { name: 'Actions' });
    expect(timelines).toHaveLength(2);
    expect(within(timelines[0] as HTMLElement).getAllByRole('listitem')).toHaveLength(1);
  });

  it("shows a running child as running, and its approval as the parent's question", () => {
    panel(
      started(),
      toolCall('p1', 'delegate', { prompt: 'open the invoice', to: 'far' }),
      child('fedcba9876543210', started()),
      child('fedcba9876543210', toolCall('c1')),
      child('fedcba9876543210', { type: 'approval_needed', request: approvalRequest('c1') }),
      {
        type: 'approval_needed',
        request: approvalRequest('fedcba98.c1', { summary: '[delegated task] left_click at (100, 50)' }),
      },
    );
    const section = screen.getByRole('region', { name: 'Delegated task fedcba98' });
    expect(section).toHaveTextContent('running');
    const card = screen.getByRole('region', { name: 'Approval needed' });
    expect(card).toHaveTextContent('[delegated task] left_click at (100, 50)');
    expect(within(section).queryByRole('region', { name: 'Approval needed' })).toBeNull();
  });
});
