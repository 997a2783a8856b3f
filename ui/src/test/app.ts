// The whole app over a fake shell, driven as the person would, with the shell's channel to
// push a run's events through.
import { render, screen, waitFor } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { expect } from 'vitest';
import App from '../App.svelte';
import { run } from '../lib/run/runStore.svelte';
import { initialRunState } from '../lib/run/state';
import type { ApprovalPolicy, WindowUpdate } from '../lib/types';
import { fakeShell } from './shell';

/** The app with a fresh session; `emit` works once a message has been sent. */
export function renderApp(mode: ApprovalPolicy = 'ask') {
  run.state = initialRunState();
  run.check = null;
  let channel: ((update: WindowUpdate) => void) | null = null;
  const calls = fakeShell((cmd, args) => {
    if (cmd === 'send_message') {
      const onEvent = (args as { onEvent: { onmessage: (update: WindowUpdate) => void } }).onEvent;
      channel = (update) => onEvent.onmessage(update);
      return 's1';
    }
    if (cmd === 'get_settings') return { approval_mode: mode };
    if (cmd === 'key_status') return { set: true, required: true };
    if (cmd === 'list_sessions') return [];
    return null;
  });
  render(App);
  const emit = (...updates: WindowUpdate[]) => updates.forEach((update) => channel!(update));
  /** The arguments of every call of `cmd` so far. */
  const sent = (cmd: string) => calls.filter((c) => c.cmd === cmd).map((c) => c.args);
  return { calls, emit, sent, started: () => channel !== null };
}

/** The app mid-run: `prompt` sent, its channel open. */
export async function runningApp(prompt: string, mode: ApprovalPolicy = 'ask') {
  const app = renderApp(mode);
  await userEvent.type(screen.getByLabelText('Message text'), `${prompt}{Enter}`);
  await waitFor(() => expect(app.started()).toBe(true));
  return app;
}
