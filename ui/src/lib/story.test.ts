import { describe, expect, it } from 'vitest';
import { approvalRequest, image, started, toolCall, toolResult } from '../test/events';
import { applyEvent } from './run/reduce';
import { initialRunState, type TimelineEntry } from './run/state';
import { outcome, storyLine } from './story';
import type { AgentEvent, Target } from './types';

/** The step of one call, folded from its events. */
function step(name: string, input: unknown, ...after: AgentEvent[]): TimelineEntry {
  const state = initialRunState();
  for (const event of [started(), toolCall('t1', name, input), ...after]) applyEvent(state, event, 0);
  return state.timeline[0]!;
}

/** A line as text, strong spans in ** and code in backticks, to compare at a glance. */
function line(entry: TimelineEntry): string {
  return storyLine(entry)
    .map((s) => (s.strong ? `**${s.text}**` : s.code ? `\`${s.text}\`` : s.text))
    .join('');
}

const seven: Target = { known: true, name: '7', role: 'toggle button', app: 'galculator', sensitive: false };
const asked = (input: unknown, target?: Target): AgentEvent => ({
  type: 'approval_needed',
  request: approvalRequest('t1', { input, ...(target ? { target } : {}) }),
});

describe('story lines', () => {
  it('say each computer action in plain words with its target', () => {
    const click = { action: 'left_click', coordinate: [10, 20] };
    const cases: [unknown, string, AgentEvent[]][] = [
      [{ action: 'screenshot' }, 'Took a screenshot', []],
      [click, 'Clicked **7** in galculator', [asked(click, seven)]],
      [click, 'Clicked at (10, 20)', []],
      [{ action: 'double_click', coordinate: [1, 2] }, 'Double-clicked at (1, 2)', []],
      [{ action: 'right_click', coordinate: [1, 2] }, 'Right-clicked at (1, 2)', []],
      [{ action: 'type', text: '+1=' }, 'Typed `+1=`', []],
      [{ action: 'key', text: 'ctrl+s' }, 'Pressed `ctrl+s`', []],
      [{ action: 'hold_key', text: 'shift', duration: 2 }, 'Held `shift` for 2 s', []],
      [{ action: 'scroll', coordinate: [5, 5], scroll_direction: 'down' }, 'Scrolled down at (5, 5)', []],
      [{ action: 'left_click_drag', start_coordinate: [1, 2], coordinate: [3, 4] }, 'Dragged from (1, 2) to (3, 4)', []],
      [{ action: 'mouse_move', coordinate: [3, 4] }, 'Moved the pointer to (3, 4)', []],
      [{ action: 'wait', duration: 1 }, 'Waited 1 s', []],
      [{ action: 'zoom', region: [0, 0, 9, 9] }, 'Zoomed in on part of the screen', []],
      [{ action: 'cursor_position' }, 'Read where the pointer is', []],
    ];
    for (const [input, expected, events] of cases) expect(line(step('computer', input, ...events))).toBe(expected);
  });

  it('say the ui tool, bash, the editor, notes, the plan, delegation and plugins', () => {
    const uiClick = { action: 'click', role: 'toggle button', name: '7' };
    expect(line(step('ui', uiClick, asked(uiClick, seven)))).toBe('Clicked **7** in galculator');
    expect(line(step('ui', uiClick))).toBe('Clicked **7**');
    expect(line(step('ui', { action: 'click', ref: 'e12' }))).toBe('Clicked element e12');
    expect(line(step('ui', { action: 'type', ref: 'e3', text: 'hi' }))).toBe('Typed `hi` into element e3');
    expect(line(step('ui', { action: 'find', query: 'Save' }))).toBe('Looked for `Save`');
    expect(line(step('ui', { action: 'read', ref: 'e3' }))).toBe('Read element e3');
    expect(line(step('ui', { action: 'elements' }))).toBe('Listed what is on the screen');
    expect(line(step('bash', { command: 'ls -la' }))).toBe('Ran `ls -la`');
    expect(line(step('bash', { restart: true }))).toBe('Restarted the shell');
    expect(line(step('str_replace_based_edit_tool', { command: 'view', path: 'notes.txt' }))).toBe('Read `notes.txt`');
    expect(line(step('str_replace_based_edit_tool', { command: 'str_replace', path: 'a.rs' }))).toBe('Edited `a.rs`');
    expect(line(step('str_replace_based_edit_tool', { command: 'create', path: 'b' }))).toBe('Created `b`');
    expect(line(step('memory', { action: 'remember', text: 'x' }))).toBe('Saved a note');
    expect(line(step('memory', { action: 'search', query: 'vpn' }))).toBe('Searched the notes for `vpn`');
    expect(line(step('memory', { action: 'recall', session_id: 's' }))).toBe('Recalled an earlier session');
    expect(line(step('plan', { action: 'set', steps: [] }))).toBe('Made a plan');
    expect(line(step('delegate', { prompt: 'file the report', to: 'lab' }))).toBe('Handed a task to lab: `file the report`');
    expect(line(step('files__read', { path: '/x' }))).toBe('Used `files__read`');
  });

  it('keep a long or multi-line value on one shortened line, and a name from the screen as text', () => {
    const typed = line(step('computer', { action: 'type', text: `${'a'.repeat(100)}\nb` }));
    expect(typed).toBe(`Typed \`${'a'.repeat(60)}… (104 characters)\``);
    const hostile = { ...seven, name: '<img src=x onerror=alert(1)> **' };
    const click = { action: 'left_click', coordinate: [1, 1] };
    const spans = storyLine(step('computer', click, asked(click, hostile)));
    expect(spans[2]).toEqual({ text: '<img src=x onerror=alert(1)> **', strong: true });
  });

  it('end as done, changed nothing, refused, failed or stopped', () => {
    const click = { action: 'left_click', coordinate: [1, 1] };
    expect(outcome(step('computer', click))).toBe('running');
    expect(outcome(step('computer', click, asked(click)))).toBe('waiting');
    expect(outcome(step('computer', click, toolResult('t1', { images: [image('a')] })))).toBe('done');
    expect(outcome(step('computer', click, toolResult('t1', { changed: false })))).toBe('no_change');
    const denied: AgentEvent = { type: 'approval_decided', id: 't1', decision: 'deny', reason: null, by: 'window' };
    expect(outcome(step('computer', click, asked(click), denied, toolResult('t1', { status: 'denied' })))).toBe('refused');
    expect(outcome(step('computer', click, toolResult('t1', { status: 'error', isError: true })))).toBe('failed');
    expect(outcome(step('computer', click, toolResult('t1', { status: 'cancelled' })))).toBe('stopped');
  });
});
