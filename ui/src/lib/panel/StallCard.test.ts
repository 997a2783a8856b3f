import { render, screen, waitFor, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { done, stall, started, toolCall } from '../../test/events';
import { fakeShell } from '../../test/shell';
import { runningApp } from '../../test/app';
import { RunStore } from '../run/runStore.svelte';
import { SETTLE_MS } from './decisionGuard';
import StallCard from './StallCard.svelte';

const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 50));

const ask = (steps?: string[]) => stall('ask', steps);

/** A card wired to a real store over a fake shell, as the app wires it. */
function renderCard() {
  const calls = fakeShell();
  const store = new RunStore();
  store.apply(started());
  store.apply(ask());
  render(StallCard, {
    question: store.state.stall!,
    answering: false,
    onanswer: (answer) => void store.answerStall(answer),
  });
  const answers = () => calls.filter((c) => c.cmd === 'answer_stall').map((c) => c.args);
  return { answers };
}

const card = () => screen.queryByRole('region', { name: 'The agent seems stuck' });

describe('StallCard', () => {
  it('says what repeated and goes on with Enter on its focused Continue button, once seen', async () => {
    // The card's clock stands still until the test moves it: on a loaded machine the first
    // Enter could otherwise come after the settle time.
    vi.useFakeTimers({ toFake: ['performance'] });
    try {
      const { answers } = renderCard();
      expect(document.activeElement).toBe(document.body);
      screen.getByRole('button', { name: 'Continue' }).focus();
      await userEvent.keyboard('{Enter}');
      expect(answers()).toEqual([]);
      vi.advanceTimersByTime(SETTLE_MS + 50);
      await userEvent.keyboard('{Enter}');
      expect(answers()).toEqual([{ answer: { answer: 'continue' } }]);
    } finally {
      vi.useRealTimers();
    }
    expect(screen.getByText(/It repeats the same action on the same screen: the same action ran 3 times/)).toBeInTheDocument();
  });

  it('sends the typed hint, with the button or Enter in the hint field', async () => {
    const { answers } = renderCard();
    await settle();
    await userEvent.type(screen.getByLabelText('Hint for the agent'), '  use Ctrl+S instead ');
    await userEvent.click(screen.getByRole('button', { name: 'Continue with hint' }));
    expect(answers()).toEqual([{ answer: { answer: 'hint', text: 'use Ctrl+S instead' } }]);
  });

  it('refuses an empty or too long hint with a clear error and sends nothing', async () => {
    const { answers } = renderCard();
    await settle();
    await userEvent.click(screen.getByRole('button', { name: 'Continue with hint' }));
    expect(screen.getByRole('alert')).toHaveTextContent('Write a hint first, or choose Continue.');
    const box = screen.getByLabelText('Hint for the agent');
    await userEvent.click(box);
    await userEvent.paste('é'.repeat(1001));
    await userEvent.keyboard('{Enter}');
    expect(screen.getByRole('alert')).toHaveTextContent('A hint is at most 2,000 bytes');
    expect(answers()).toEqual([]);
  });

  it('stops on Esc from anywhere, and ignores a click in its first moments', async () => {
    const { answers } = renderCard();
    await userEvent.click(screen.getByRole('button', { name: /Stop/ }));
    expect(answers()).toEqual([]);
    await settle();
    await userEvent.keyboard('{Escape}');
    expect(answers()).toEqual([{ answer: { answer: 'stop' } }]);
  });
});

describe('StallCard in the window', () => {
  it('shows on the question, goes away when it is answered, and Esc answers it rather than stopping', async () => {
    const { emit, calls, sent } = await runningApp('save the file', 'auto');
    const answers = () => sent('answer_stall');
    emit(started(), toolCall('t1'));
    expect(card()).toBeNull();
    emit(stall('note'));
    expect(card()).toBeNull();
    emit(ask());
    await waitFor(() => expect(card()).not.toBeNull());
    await settle();
    await userEvent.keyboard('{Escape}');
    expect(answers()).toEqual([{ answer: { answer: 'stop' } }]);
    expect(calls.map((c) => c.cmd)).not.toContain('stop');
    emit({ type: 'stall_answered', answer: 'stop' }, stall('stalled'), done('stalled'));
    await waitFor(() => expect(card()).toBeNull());
    expect(screen.getByText(/Stopped because the agent was stuck/)).toBeInTheDocument();
  });

  it('goes away when the run ends unanswered, and a new question gets a new card', async () => {
    const { emit, sent } = await runningApp('save the file', 'auto');
    const answers = () => sent('answer_stall');
    emit(started(), ask(['t1']));
    await waitFor(() => expect(card()).not.toBeNull());
    await settle();
    screen.getByRole('button', { name: 'Continue' }).focus();
    // Enter held down: the first press answers this question ...
    await userEvent.keyboard('{Enter>}');
    emit({ type: 'stall_answered', answer: 'continue' }, ask(['t4']));
    await waitFor(() => expect(within(card()!).getByRole('button', { name: 'Continue' })).toBeInTheDocument());
    // ... and its repeats do not answer the next one, nor does a late click.
    await settle();
    await userEvent.keyboard('{Enter>3}');
    await userEvent.keyboard('{/Enter}');
    expect(answers()).toEqual([{ answer: { answer: 'continue' } }]);
    emit(done('cancelled'));
    await waitFor(() => expect(card()).toBeNull());
  });
});
