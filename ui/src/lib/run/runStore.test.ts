import { mockIPC } from '@tauri-apps/api/mocks';
import type { Channel } from '@tauri-apps/api/core';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../types';
import { approvalRequest, assistantText, delta, done, started, toolCall, userText } from '../../test/events';
import { RunStore } from './runStore.svelte';

interface Call {
  cmd: string;
  args: Record<string, unknown>;
}

/** Records every command; `send_message` hands its channel to the test. */
function fakeShell(reply: (cmd: string, args: Record<string, unknown>) => unknown = () => null) {
  const calls: Call[] = [];
  let channel: Channel<AgentEvent> | null = null;
  mockIPC((cmd, payload) => {
    const args = (payload ?? {}) as Record<string, unknown>;
    calls.push({ cmd, args });
    if (cmd === 'send_message') {
      channel = args.onEvent as Channel<AgentEvent>;
      return 's1';
    }
    return reply(cmd, args);
  });
  const emit = (...events: AgentEvent[]) => {
    for (const event of events) channel?.onmessage(event);
  };
  return { calls, emit };
}

describe('RunStore', () => {
  it('sends a message and folds the streamed events', async () => {
    const shell = fakeShell();
    const store = new RunStore();
    await store.send('hello', [{ id: 'a1' }]);
    expect(shell.calls[0]).toMatchObject({
      cmd: 'send_message',
      args: { sessionId: null, text: 'hello', attachments: [{ id: 'a1' }] },
    });
    expect(store.busy).toBe(true);
    shell.emit(started(), userText('hello'), delta('Hi'));
    expect(store.state.draft).toBe('Hi');
    shell.emit(assistantText('Hi!'), done('done'));
    expect(store.busy).toBe(false);
    expect(store.state.chat).toHaveLength(2);

    await store.send('again', []);
    expect(shell.calls.at(-1)?.args.sessionId).toBe('s1');
  });

  it('reports a missing key from send_message inline', async () => {
    mockIPC(() => {
      throw { kind: 'no_key', message: 'no API key for anthropic' };
    });
    const store = new RunStore();
    await store.send('hello', []);
    expect(store.busy).toBe(false);
    expect(store.state.error?.kind).toBe('no_key');
    expect(store.state.error?.advice).toMatch(/Settings/);
  });

  it('sends a decision for the pending action once', async () => {
    const shell = fakeShell();
    const store = new RunStore();
    await store.send('go', []);
    shell.emit(started(), toolCall('t1'), { type: 'approval_needed', request: approvalRequest('t1') });
    await Promise.all([
      store.decide('t1', { decision: 'deny', reason: 'no' }),
      store.decide('t1', { decision: 'approve' }),
    ]);
    const approvals = shell.calls.filter((c) => c.cmd === 'approve');
    expect(approvals).toEqual([
      { cmd: 'approve', args: { toolUseId: 't1', decision: { decision: 'deny', reason: 'no' } } },
    ]);
    shell.emit({ type: 'approval_decided', id: 't1', decision: 'deny', reason: 'no', by: 'user' });
    expect(store.deciding).toBe(false);
    expect(store.state.pending).toBeNull();
  });

  it('drops a decision for a call other than the pending one', async () => {
    const shell = fakeShell();
    const store = new RunStore();
    await store.send('go', []);
    shell.emit(started(), toolCall('t1'), { type: 'approval_needed', request: approvalRequest('t1') });
    shell.emit({ type: 'approval_decided', id: 't1', decision: 'approve', by: 'user' }, toolCall('t2'));
    shell.emit({ type: 'approval_needed', request: approvalRequest('t2') });
    // A decision made on the card of t1, landing after t2 became the pending call.
    await store.decide('t1', { decision: 'approve' });
    expect(shell.calls.filter((c) => c.cmd === 'approve')).toEqual([]);
  });

  it('takes a no in the native confirmation of the shell as "not done", not as an error', async () => {
    const declined = () => {
      throw { kind: 'declined', message: 'not done: it was not confirmed in the dialog' };
    };
    const shell = fakeShell((cmd) => (cmd === 'set_approval_mode' || cmd === 'approve' ? declined() : null));
    const store = new RunStore();
    await store.setMode('auto');
    expect(store.mode).toBe('ask');
    await store.send('go', []);
    shell.emit(started(), toolCall('t1'), { type: 'approval_needed', request: approvalRequest('t1') });
    await store.decide('t1', { decision: 'approve_kind' });
    expect(store.deciding).toBe(false);
    expect(store.state.pending?.tool_use_id).toBe('t1');
    expect(store.state.error).toBeNull();
  });

  it('stops a run and switches the approval mode mid-run', async () => {
    const shell = fakeShell();
    const store = new RunStore();
    await store.send('go', []);
    await store.setMode('auto');
    await store.stop();
    expect(store.state.phase).toBe('stopping');
    expect(shell.calls.map((c) => c.cmd)).toEqual(['send_message', 'set_approval_mode', 'stop']);
    expect(shell.calls[1]?.args).toEqual({ mode: 'auto' });
    expect(store.mode).toBe('auto');
  });

  it('reopens a stored session by replaying its events', async () => {
    fakeShell((cmd) =>
      cmd === 'load_session'
        ? {
            session: { id: 'old' },
            messages: [],
            events: [started('old'), userText('earlier'), toolCall('t1'), assistantText('done it'), done('done')],
          }
        : null,
    );
    const store = new RunStore();
    await store.open('old');
    expect(store.state.sessionId).toBe('old');
    expect(store.state.chat.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(store.state.timeline.map((e) => e.id)).toEqual(['t1']);
    expect(store.busy).toBe(false);
  });
});
