import { render, screen } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';
import { approvalRequest, started, toolCall } from '../test/events';
import CompactBar from './CompactBar.svelte';
import { escape } from './emphasis';
import { applyEvent } from './run/reduce';
import { initialRunState } from './run/state';

describe('CompactBar', () => {
  it('says the step under way with the name from the screen bold, never its markup', () => {
    const run = initialRunState();
    const name = '<b>7</b> **';
    const summary = `Click **${escape(name)}** (toggle button) in galculator`;
    for (const event of [
      started(),
      toolCall('t1'),
      { type: 'approval_needed', request: approvalRequest('t1', { summary }) } as const,
      { type: 'approval_decided', id: 't1', decision: 'approve', by: 'window' } as const,
    ]) {
      applyEvent(run, event, 0);
    }
    render(CompactBar, { run, onstop: vi.fn() });
    const bar = screen.getByRole('status', { name: 'Current step' });
    expect(bar).toHaveTextContent(`Click ${name} (toggle button) in galculator`);
    expect(bar.querySelector('strong')?.textContent).toBe(name);
    expect(bar.querySelector('b')).toBeNull();
  });
});
