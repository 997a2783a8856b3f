import { render, screen, waitFor } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { fakeShell } from '../../test/shell';
import { renderApp } from '../../test/app';
import { RunStore } from '../run/runStore.svelte';
import type { SavedCheck } from '../types';
import CheckDialog from './CheckDialog.svelte';

const REFUSED = "the check: the check's program `no-such-checker` was not found (not a file, not on PATH)";

/** The dialog over a real store and a fake shell whose saved check is `saved`. */
function renderDialog(sessionId: string | null, saved: SavedCheck | null = null) {
  let stored = saved;
  const calls = fakeShell((cmd, args) => {
    const a = args as { id: string; check: SavedCheck | null };
    if (cmd === 'get_session_check') return stored;
    if (cmd === 'set_session_check') {
      if (a.check?.command.startsWith('no-such-checker')) throw { kind: 'invalid', message: REFUSED };
      stored = a.check;
    }
    return null;
  });
  const store = new RunStore();
  store.state.sessionId = sessionId;
  let closed = 0;
  render(CheckDialog, {
    sessionId,
    current: store.check,
    onsave: (check) => store.saveCheck(check),
    onclose: () => (closed += 1),
  });
  const saves = () => calls.filter((c) => c.cmd === 'set_session_check').map((c) => c.args);
  return { store, saves, closed: () => closed };
}

const fill = async (command: string, timeout: string) => {
  await userEvent.clear(screen.getByLabelText('Command'));
  if (command) await userEvent.type(screen.getByLabelText('Command'), command);
  await userEvent.clear(screen.getByLabelText('Timeout (seconds)'));
  if (timeout) await userEvent.type(screen.getByLabelText('Timeout (seconds)'), timeout);
};

describe('CheckDialog', () => {
  it("shows a stored session's check, and shows the shell's refusal while keeping the saved one", async () => {
    const { store, saves, closed } = renderDialog('s1', { command: 'test -f ~/a.txt', timeout_secs: 30 });
    await waitFor(() => expect(screen.getByLabelText('Command')).toHaveValue('test -f ~/a.txt'));
    expect(screen.getByLabelText('Timeout (seconds)')).toHaveValue(30);
    await fill('no-such-checker --now', '10');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    expect(await screen.findByRole('alert')).toHaveTextContent(REFUSED);
    expect(closed()).toBe(0);
    expect(store.check).toBeNull();
    await fill('test -f ~/b.txt', '12.5');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(closed()).toBe(1));
    expect(saves().at(-1)).toEqual({ id: 's1', check: { command: 'test -f ~/b.txt', timeout_secs: 12.5 } });
    expect(store.check).toEqual({ command: 'test -f ~/b.txt', timeout_secs: 12.5 });
  });

  it('refuses an empty command or a timeout out of range before asking the shell', async () => {
    const { saves, closed } = renderDialog('s1');
    await waitFor(() => expect(screen.getByLabelText('Timeout (seconds)')).toHaveValue(60));
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    expect(screen.getByRole('alert')).toHaveTextContent('Write the command the check runs, or remove the check.');
    await fill('true', '0');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    expect(screen.getByRole('alert')).toHaveTextContent('more than 0 and at most 86,400');
    await fill('true', '');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    expect(screen.getByRole('alert')).toHaveTextContent('more than 0 and at most 86,400');
    expect(saves()).toEqual([]);
    expect(closed()).toBe(0);
  });

  it("removes a stored session's check", async () => {
    const { saves, store } = renderDialog('s1', { command: 'true', timeout_secs: 60 });
    await userEvent.click(await screen.findByRole('button', { name: 'Remove the check' }));
    expect(saves()).toEqual([{ id: 's1', check: null }]);
    expect(store.check).toBeNull();
  });

  it("holds a new chat's check without asking the shell", async () => {
    const { saves, store, closed } = renderDialog(null);
    expect(screen.getByText(/saved with the session when you send its first message/)).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Remove the check' })).toBeNull();
    await fill('test -d /tmp/out', '5');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(closed()).toBe(1));
    expect(saves()).toEqual([]);
    expect(store.check).toEqual({ command: 'test -d /tmp/out', timeout_secs: 5 });
  });
});

describe('CheckDialog in the window', () => {
  it("is opened from the header, and a new chat's check goes with its first message", async () => {
    const { sent } = renderApp();
    await userEvent.click(screen.getByRole('button', { name: 'Check' }));
    await fill('test -s ~/report.pdf', '');
    await userEvent.type(screen.getByLabelText('Timeout (seconds)'), '45');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    const on = await screen.findByRole('button', { name: 'Check: on' });
    expect(on).toHaveAttribute('title', 'Check: test -s ~/report.pdf');
    await userEvent.type(screen.getByLabelText('Message text'), 'write the report{Enter}');
    await waitFor(() => expect(sent('send_message')).toHaveLength(1));
    expect(sent('send_message')[0]).toMatchObject({
      sessionId: null,
      check: { command: 'test -s ~/report.pdf', timeout_secs: 45 },
    });
  });
});
