// The side panel as a test sees it: the run after some events, on the person's screen.
import { render } from '@testing-library/svelte';
import { vi } from 'vitest';
import SidePanel from '../lib/panel/SidePanel.svelte';
import { applyEvent } from '../lib/run/reduce';
import { initialRunState } from '../lib/run/state';
import type { AgentEvent } from '../lib/types';
import { fakeShell } from './shell';

export function runAfter(...events: AgentEvent[]) {
  const run = initialRunState();
  for (const event of events) applyEvent(run, event, 0);
  return run;
}

export function sidePanel(...events: AgentEvent[]) {
  fakeShell();
  return render(SidePanel, {
    run: runAfter(...events),
    deciding: false,
    ondecide: vi.fn(),
    answering: false,
    onanswer: vi.fn(),
    busy: false,
    desktop: { agent: false, sandbox: true, keep: false },
    ondesktop: vi.fn(),
  });
}
