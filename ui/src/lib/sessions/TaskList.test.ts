import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { fakeShell } from '../../test/shell';
import { escape } from '../emphasis';
import type { TaskInfo } from '../types';
import TaskList from './TaskList.svelte';

const task = (id: string, state: TaskInfo['state'], origin: TaskInfo['origin'], extra: Partial<TaskInfo> = {}): TaskInfo => ({
  id,
  session_id: `session-${id}`,
  state,
  origin,
  prompt: `prompt ${id}`,
  pid: 42,
  waiting_for: null,
  error: null,
  created_at: '2026-11-25T10:00:00Z',
  updated_at: '2026-11-25T10:00:00Z',
  ...extra,
});

describe('TaskList', () => {
  it('shows live tasks of every front end with what each waits for, and opens their session', async () => {
    fakeShell((cmd) =>
      cmd === 'list_tasks'
        ? [
            task('a', 'waiting_for_approval', 'api', {
              waiting_for: {
                tool_use_id: 't1',
                tool: 'bash',
                input: {},
                kind: 'bash',
                read_only: false,
                summary: 'bash: rm -rf build\u202e',
                detail: null,
              },
            }),
            task('b', 'running', 'cli'),
            task('c', 'done', 'window'),
          ]
        : null,
    );
    const onopen = vi.fn();
    render(TaskList, { onopen });
    expect(await screen.findByText('waits for: bash: rm -rf build\\u{202e} · API')).toBeInTheDocument();
    expect(screen.getByText('running · CLI')).toBeInTheDocument();
    expect(screen.queryByText('prompt c')).toBeNull();
    await userEvent.click(screen.getByRole('button', { name: /prompt b/ }));
    expect(onopen).toHaveBeenCalledWith('session-b');
  });

  it('shows what a task waits for with the name from the screen strong, as text, never markup', async () => {
    const name = '<img src=x onerror=alert(1)> **';
    const waiting_for = {
      tool_use_id: 't1',
      tool: 'ui',
      input: {},
      kind: 'ui.click',
      read_only: false,
      summary: `Click **${escape(name)}** (push button) in Mousepad`,
      detail: null,
    };
    fakeShell((cmd) => (cmd === 'list_tasks' ? [task('a', 'waiting_for_approval', 'cli', { waiting_for })] : null));
    render(TaskList, { onopen: vi.fn() });
    const strong = await screen.findByText(name, { selector: 'strong' });
    expect(strong.parentElement).toHaveTextContent(`waits for: Click ${name} (push button) in Mousepad · CLI`);
    expect(document.querySelector('img')).toBeNull();
  });

  it('shows nothing when no task is live', async () => {
    const calls = fakeShell((cmd) => (cmd === 'list_tasks' ? [task('c', 'done', 'window')] : null));
    render(TaskList, { onopen: vi.fn() });
    await vi.waitFor(() => expect(calls.some((c) => c.cmd === 'list_tasks')).toBe(true));
    expect(screen.queryByRole('region', { name: 'Tasks' })).toBeNull();
  });
});
