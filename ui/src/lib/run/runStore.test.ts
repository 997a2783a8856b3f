import { mockIPC } from '@tauri-apps/api/mocks';
import type { Channel } from '@tauri-apps/api/core';
import { describe, expect, it } from 'vitest';
import type { WindowUpdate } from '../types';
import { approvalRequest, assistantText, delta, done, started, toolCall, userText } from '../../test/events';
import { RunStore } from './runStore.svelte';

interface Call {
  cmd: string;
  args: Record<string, unknown>;
}

/** Records every command; `send_message` hands its channel to the test. */
function fakeShell(reply: (cmd: string, args: Record<string, unknown>) => unknown = () => null) {
  const calls: Call[] = [];
  let channel: Channel<WindowUpdate> | null = null;
  mockIPC((cmd, payload) => {
    const args = (payload ?? {}) as Record<string, unknown>;
    calls.push({ cmd, args });
    if (cmd === 'send_message') {
      channel = args.onEvent as Channel<WindowUpdate>;
      return 's1';
    }
    return reply(cmd, args);
  });
  const emit = (...updates: WindowUpdate[]) => {
    for (const update of updates) channel?.onmessage(update);
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

  it("keeps the shell's notices about a run beside its events, until the next send", async () => {
    const shell = fakeShell();
    const store = new RunStore();
    await store.send('hello', []);
    shell.emit({ type: 'notice', message: 'the agent works on its own desktop, display :5' }, started());
    expect(store.state.notices).toEqual(['the agent works on its own desktop, display :5']);
    expect(store.state.phase).toBe('running');
    shell.emit(assistantText('Hi!'), done('done'));
    expect(store.state.notices).toHaveLength(1);

    await store.send('again', []);
    expect(store.state.notices).toEqual([]);
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

  it('answers the stall question once, and only while one is open', async () => {
    const shell = fakeShell();
    const store = new RunStore();
    await store.answerStall({ answer: 'continue' });
    await store.send('go', []);
    shell.emit(started(), toolCall('t1'));
    await store.answerStall({ answer: 'stop' });
    expect(shell.calls.map((c) => c.cmd)).toEqual(['send_message']);
    shell.emit({ type: 'stall_detected', pattern: 'cycle', steps: ['t1'], step: 'ask', message: 'round' });
    const first = store.answerStall({ answer: 'hint', text: 'use the menu' });
    await store.answerStall({ answer: 'stop' });
    await first;
    expect(shell.calls.filter((c) => c.cmd === 'answer_stall').map((c) => c.args)).toEqual([
      { answer: { answer: 'hint', text: 'use the menu' } },
    ]);
    expect(store.answering).toBe(true);
    shell.emit({ type: 'stall_answered', answer: 'hint', text: 'use the menu' });
    expect(store.answering).toBe(false);
    expect(store.state.stall).toBeNull();
  });

  it('shows why a stall answer was refused and lets the person answer again', async () => {
    const shell = fakeShell((cmd) => {
      if (cmd === 'answer_stall') throw { kind: 'not_found', message: 'no run is asking whether to go on' };
    });
    const store = new RunStore();
    await store.send('go', []);
    shell.emit(started(), { type: 'stall_detected', pattern: 'cycle', steps: [], step: 'ask', message: 'round' });
    await store.answerStall({ answer: 'continue' });
    expect(store.answering).toBe(false);
    expect(store.state.error?.message).toBe('no run is asking whether to go on');
    expect(store.state.stall).not.toBeNull();
  });

  it("sends a new chat's check with its first message only, and saves a stored session's at once", async () => {
    const shell = fakeShell((cmd, args) => {
      if (cmd === 'set_session_check' && (args.check as { command: string } | null)?.command === 'nope') {
        throw { kind: 'invalid', message: "the check: the check's program `nope` was not found" };
      }
      return null;
    });
    const store = new RunStore();
    const check = { command: 'test -f ~/report.pdf', timeout_secs: 30 };
    await store.saveCheck(check);
    expect(shell.calls).toEqual([]);
    await store.send('make the report', []);
    expect(shell.calls[0]?.args.check).toEqual(check);
    shell.emit(started(), done('done'));
    await store.send('again', []);
    expect(shell.calls[1]?.args).toMatchObject({ sessionId: 's1', check: null });

    await expect(store.saveCheck({ command: 'nope', timeout_secs: 5 })).rejects.toMatchObject({ kind: 'invalid' });
    expect(store.check).toEqual(check);
    await store.saveCheck(null);
    expect(shell.calls.at(-1)).toEqual({ cmd: 'set_session_check', args: { id: 's1', check: null } });
    expect(store.check).toBeNull();
  });

  it("reads a reopened session's check, and a new chat starts without one", async () => {
    const check = { command: 'true', timeout_secs: 60 };
    fakeShell((cmd, args) => {
      if (cmd === 'load_session') return { session: { id: 'old' }, messages: [], events: [] };
      if (cmd === 'get_session_check') return args.id === 'old' ? check : null;
      return null;
    });
    const store = new RunStore();
    await store.open('old');
    expect(store.check).toEqual(check);
    store.newSession();
    expect(store.check).toBeNull();
  });
});
