import type { Channel } from '@tauri-apps/api/core';
import { render, screen, waitFor, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import App from './App.svelte';
import type { KeyInfo } from './lib/ipc';
import { run } from './lib/run/runStore.svelte';
import { initialRunState } from './lib/run/state';
import type { WindowUpdate } from './lib/types';
import {
  approvalRequest,
  assistantText,
  delta,
  done,
  image,
  started,
  toolCall,
  toolResult,
  usage,
  userText,
} from './test/events';
import { fakeShell } from './test/shell';

const keyMissing: KeyInfo = {
  provider: 'anthropic',
  set: false,
  last4: null,
  source: null,
  keyring_available: false,
  keyring_error: 'no Secret Service on the session bus',
  required: true,
};

function app(key: KeyInfo = { ...keyMissing, set: true, last4: 'abcd', source: 'keyring', keyring_available: true }) {
  let channel: Channel<WindowUpdate> | null = null;
  const calls = fakeShell((cmd, args) => {
    const a = args as Record<string, unknown>;
    switch (cmd) {
      case 'key_status':
        return key;
      case 'set_api_key':
        return { ...key, set: true, last4: String(a.key).slice(-4), source: 'keyring' };
      case 'get_settings':
        return { approval_mode: 'ask' };
      case 'list_sessions':
        return [
          {
            id: 'old',
            title: 'Earlier work',
            created_at: '2025-01-01T10:00:00Z',
            updated_at: '2025-01-01T10:05:00Z',
            message_count: 2,
            provider: 'anthropic',
            model: 'claude-sonnet-4-5',
            usage: usage(10, 5),
            cost_usd: 0.25,
          },
        ];
      case 'send_message':
        channel = a.onEvent as Channel<WindowUpdate>;
        return 's1';
      case 'load_session':
        return {
          session: { id: 'old', usage: usage(4000, 900), cost_usd: 0.25 },
          messages: [],
          events: [started('old'), userText('earlier question'), assistantText('earlier answer'), done('done')],
        };
    }
    return null;
  });
  render(App);
  const emit = (...updates: WindowUpdate[]) => updates.forEach((update) => channel?.onmessage(update));
  return { calls, emit };
}

afterEach(() => {
  run.state = initialRunState();
});

describe('App', () => {
  it('asks for a key on first run and explains a missing keyring', async () => {
    const { calls } = app(keyMissing);
    const prompt = await screen.findByRole('dialog', { name: 'Add an API key' });
    expect(prompt).toHaveTextContent('The system keyring is not available, so Deskhand cannot store a key: no Secret Service on the session bus');
    await userEvent.type(within(prompt).getByLabelText('API key', { selector: 'input' }), 'sk-ant-secret-wxyz');
    await userEvent.click(within(prompt).getByRole('button', { name: 'Save key' }));
    expect(calls).toContainEqual({ cmd: 'set_api_key', args: { provider: 'anthropic', key: 'sk-ant-secret-wxyz' } });
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Add an API key' })).toBeNull());
  });

  it('runs a message through to streamed text, an approval and a screenshot, and stops on Esc', async () => {
    const { calls, emit } = app();
    await userEvent.type(screen.getByLabelText('Message text'), 'open the settings{Enter}');
    expect(calls.find((c) => c.cmd === 'send_message')?.args).toMatchObject({ sessionId: null, text: 'open the settings' });

    emit(started(), userText('open the settings'), delta('I will **click**'));
    expect(await screen.findByText('click')).toHaveProperty('tagName', 'STRONG');

    emit(assistantText('I will **click**'), toolCall('t1'), { type: 'approval_needed', request: approvalRequest('t1') });
    const card = await screen.findByRole('region', { name: 'Approval needed' });
    expect(card).toHaveTextContent('left_click at (100, 50)');

    emit({ type: 'approval_decided', id: 't1', decision: 'approve', by: 'user' }, toolResult('t1', { images: [image('after')] }));
    await waitFor(() => expect(screen.queryByRole('region', { name: 'Approval needed' })).toBeNull());
    expect(await screen.findByAltText(/Screen after/)).toBeInTheDocument();

    emit({ type: 'usage', turn: usage(1200, 300), total: usage(1200, 300), turn_cost_usd: 0.0081, total_cost_usd: 0.0081 });
    await waitFor(() => expect(screen.getByTitle(/Tokens used/)).toHaveTextContent('1,200 in · 300 out · $0.008'));

    await userEvent.keyboard('{Escape}');
    expect(calls.map((c) => c.cmd)).toContain('stop');
    emit(done('cancelled'));
    expect(await screen.findByText(/Stopped. Send a message to continue/)).toBeInTheDocument();
  });

  it('stops on Esc even when a reply holds an open <dialog> or a popover', async () => {
    const { calls, emit } = app();
    await userEvent.type(screen.getByLabelText('Message text'), 'read that page{Enter}');
    emit(started(), userText('read that page'));
    emit(assistantText('Done.\n\n<dialog open>Esc is mine now</dialog>\n\n<div popover>on top</div>'));
    expect(await screen.findByText(/Esc is mine now/)).toBeInTheDocument();
    expect(document.querySelector('dialog, [popover]')).toBeNull();
    await userEvent.keyboard('{Escape}');
    expect(calls.map((c) => c.cmd)).toContain('stop');
  });

  it("shows the shell's notices about a run until the next message", async () => {
    const { emit } = app();
    await userEvent.type(screen.getByLabelText('Message text'), 'tidy my files{Enter}');
    const notice = 'the plugin server `files` did not start: no such program; going on without it';
    emit({ type: 'notice', message: notice }, started(), userText('tidy my files'));
    expect(await screen.findByText(notice)).toHaveAttribute('role', 'status');
    emit(assistantText('Tidied.'), done('done'));
    expect(await screen.findByText('Tidied.')).toBeInTheDocument();
    expect(screen.getByText(notice)).toBeInTheDocument();

    await userEvent.type(screen.getByLabelText('Message text'), 'again{Enter}');
    await waitFor(() => expect(screen.queryByText(notice)).toBeNull());
  });

  it('reopens a session from the sidebar with its conversation', async () => {
    const { calls } = app();
    await userEvent.click(await screen.findByRole('button', { name: /^Earlier work/ }));
    expect(calls).toContainEqual({ cmd: 'load_session', args: { id: 'old' } });
    expect(await screen.findByText('earlier answer')).toBeInTheDocument();
    expect(screen.getByText('earlier question')).toBeInTheDocument();
    // The meter shows the stored session's totals.
    expect(screen.getByTitle(/Tokens used/)).toHaveTextContent('4,000 in · 900 out · $0.250');
  });
});
