import { screen, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import { started } from '../../test/events';
import { runAfter, sidePanel } from '../../test/panel';
import type { AgentEvent, PlanStep } from '../types';

const step = (id: string, title: string, status: PlanStep['status'] = 'pending', note = ''): PlanStep => ({
  id,
  title,
  status,
  note,
});


const created: AgentEvent = {
  type: 'plan_updated',
  steps: [step('1', 'Open Firefox'), step('2', 'Find the invoice'), step('3', 'Print it')],
  changes: [
    { kind: 'added', id: '1', title: 'Open Firefox' },
    { kind: 'added', id: '2', title: 'Find the invoice' },
    { kind: 'added', id: '3', title: 'Print it' },
  ],
  replanned: false,
};

const ticked: AgentEvent = {
  type: 'plan_updated',
  steps: [step('1', 'Open Firefox', 'done'), step('2', 'Find the invoice', 'in_progress', 'searching'), step('3', 'Print it')],
  changes: [
    { kind: 'status', id: '1', from: 'pending', to: 'done' },
    { kind: 'status', id: '2', from: 'pending', to: 'in_progress' },
    { kind: 'note', id: '2', note: 'searching' },
  ],
  replanned: false,
};

const replanned: AgentEvent = {
  type: 'plan_updated',
  steps: [step('1', 'Open Firefox', 'done'), step('2', 'Find the invoice', 'in_progress'), step('4', 'Export it as PDF')],
  changes: [
    { kind: 'added', id: '4', title: 'Export it as PDF' },
    { kind: 'removed', id: '3', title: 'Print it' },
  ],
  replanned: true,
};

function panel(...events: AgentEvent[]) {
  return sidePanel(started(), ...events);
}

function statuses() {
  return [...screen.getByTestId('plan').querySelectorAll('li')].map((li) => [
    li.dataset.stepId,
    li.dataset.status,
  ]);
}

describe('the plan in the side panel', () => {
  it('is not shown before the model writes one', () => {
    panel();
    expect(screen.queryByTestId('plan')).toBeNull();
  });

  it('shows the steps above the timeline, ticking as they are done', () => {
    const { container } = panel(created, ticked);
    const plan = screen.getByTestId('plan');
    expect(statuses()).toEqual([
      ['1', 'done'],
      ['2', 'in_progress'],
      ['3', 'pending'],
    ]);
    expect(within(plan).getByText('1/3')).toBeInTheDocument();
    expect(within(plan).getByText('searching')).toBeInTheDocument();
    expect(within(plan).getAllByLabelText('done')).toHaveLength(1);
    // Above the timeline.
    const scroll = container.querySelector('.scroll')!;
    expect(plan.compareDocumentPosition(scroll) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(screen.queryByTestId('replanned')).toBeNull();
  });

  it('shows what a replan changed: new steps marked, dropped ones struck through', () => {
    panel(created, ticked, replanned);
    expect(statuses()).toEqual([
      ['1', 'done'],
      ['2', 'in_progress'],
      ['4', 'pending'],
    ]);
    expect(screen.getByTestId('replanned')).toBeInTheDocument();
    const fresh = screen.getByTestId('plan').querySelector('[data-step-id="4"]')!;
    expect(within(fresh as HTMLElement).getByText('new')).toBeInTheDocument();
    const dropped = screen.getByTestId('removed-steps');
    expect(dropped.querySelector('s')?.textContent).toBe('Print it');
  });

  it('comes back with a reopened session from its stored events', () => {
    const state = runAfter(started(), created, ticked, { type: 'done', status: 'done', turns: 3, session_id: 's1', usage: { input_tokens: 1, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } });
    expect(state.plan.map((s) => s.status)).toEqual(['done', 'in_progress', 'pending']);
  });
});
