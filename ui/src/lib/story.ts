// Each step of a run as one line of the chat, in plain words with its target: "Took a
// screenshot", "Clicked **7** in galculator", "Typed `+1=`", "Ran `ls -la`". Drawn from the
// timeline entry (the call's input, the target the core found before asking, the result), so
// the line says what was asked for and how it ended; the side panel has the whole step.
import type { Span } from './emphasis';
import { NAME_CHARS, TYPED_CHARS, shortened } from './shortened';
import type { TimelineEntry } from './run/state';

/** How a step ended, as the chat's badge says it. */
export type Outcome = 'waiting' | 'running' | 'done' | 'no_change' | 'refused' | 'failed' | 'stopped';

export const OUTCOME_LABELS: Record<Outcome, string> = {
  waiting: 'waiting for you',
  running: 'running',
  done: 'done',
  no_change: 'changed nothing',
  refused: 'refused',
  failed: 'failed',
  stopped: 'stopped',
};

type Json = Record<string, unknown>;

const COMPUTER_VERBS: Record<string, string> = {
  left_click: 'Clicked',
  right_click: 'Right-clicked',
  middle_click: 'Middle-clicked',
  double_click: 'Double-clicked',
  triple_click: 'Triple-clicked',
  left_mouse_down: 'Pressed the mouse button',
  left_mouse_up: 'Released the mouse button',
  scroll: 'Scrolled',
};

const MEMORY_LINES: Record<string, string> = {
  remember: 'Saved a note',
  update: 'Updated a note',
  forget: 'Forgot a note',
  search: 'Searched the notes for',
  recall: 'Recalled an earlier session',
};

const EDITOR_VERBS: Record<string, string> = {
  view: 'Read',
  create: 'Created',
  str_replace: 'Edited',
  insert: 'Inserted into',
};

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function point(value: unknown): string | null {
  return Array.isArray(value) && value.length === 2 ? `(${value[0]}, ${value[1]})` : null;
}

/** A value the model chose, as code, on one line and shortened. */
function code(text: string, max = TYPED_CHARS): Span {
  return { text: shortened(text.replace(/\s*\n\s*/g, ' ⏎ '), max), code: true };
}

/** What the step touched: the element the core found there, or the point. */
function where(entry: TimelineEntry, args: Json): Span[] {
  const target = entry.plan?.target;
  if (target?.known && target.name) {
    const spans: Span[] = [{ text: ' ' }, { text: shortened(target.name, NAME_CHARS), strong: true }];
    if (target.app) spans.push({ text: ` in ${target.app}` });
    return spans;
  }
  const at = point(args.coordinate);
  return at ? [{ text: ` at ${at}` }] : [];
}

function computerLine(entry: TimelineEntry, args: Json): Span[] {
  const action = str(args.action) ?? '';
  const text = str(args.text) ?? str(args.key);
  switch (action) {
    case 'screenshot':
      return [{ text: 'Took a screenshot' }];
    case 'type':
      return [{ text: 'Typed ' }, code(text ?? '')];
    case 'key':
      return [{ text: 'Pressed ' }, code(text ?? '')];
    case 'hold_key':
      return [{ text: 'Held ' }, code(text ?? ''), { text: ` for ${args.duration ?? '?'} s` }];
    case 'wait':
      return [{ text: `Waited ${args.duration ?? '?'} s` }];
    case 'cursor_position':
      return [{ text: 'Read where the pointer is' }];
    case 'zoom':
      return [{ text: 'Zoomed in on part of the screen' }];
    case 'left_click_drag': {
      const from = point(args.start_coordinate);
      const to = point(args.coordinate);
      return [{ text: `Dragged${from ? ` from ${from}` : ''}${to ? ` to ${to}` : ''}` }];
    }
    case 'mouse_move': {
      const to = point(args.coordinate);
      return [{ text: `Moved the pointer${to ? ` to ${to}` : ''}` }];
    }
    case 'scroll': {
      const direction = str(args.scroll_direction) ?? '';
      return [{ text: `Scrolled ${direction}`.trimEnd() }, ...where(entry, args)];
    }
    default: {
      const verb = COMPUTER_VERBS[action];
      return verb ? [{ text: verb }, ...where(entry, args)] : [{ text: 'Used the screen: ' }, code(action)];
    }
  }
}

function uiLine(entry: TimelineEntry, args: Json): Span[] {
  const action = str(args.action) ?? '';
  const target = entry.plan?.target;
  const named = target?.known && target.name ? where(entry, args) : null;
  const element = named ?? elementOf(args);
  switch (action) {
    case 'find':
      return [{ text: 'Looked for ' }, code(str(args.query) ?? '')];
    case 'elements':
      return [{ text: 'Listed what is on the screen' }];
    case 'read':
      return [{ text: 'Read' }, ...element];
    case 'type':
      return [{ text: 'Typed ' }, code(str(args.text) ?? ''), { text: ' into' }, ...element];
    case 'double_click':
      return [{ text: 'Double-clicked' }, ...element];
    default:
      return [{ text: 'Clicked' }, ...element];
  }
}

/** The element a `ui` call names, when no target was found before it ran. */
function elementOf(args: Json): Span[] {
  const name = str(args.name);
  if (name) return [{ text: ' ' }, { text: shortened(name, NAME_CHARS), strong: true }];
  const ref = str(args.ref);
  return ref ? [{ text: ` element ${ref}` }] : [];
}

/** The step as one line of spans. */
export function storyLine(entry: TimelineEntry): Span[] {
  const args = (typeof entry.input === 'object' && entry.input !== null ? entry.input : {}) as Json;
  switch (entry.name) {
    case 'computer':
      return computerLine(entry, args);
    case 'ui':
      return uiLine(entry, args);
    case 'bash':
      return args.restart ? [{ text: 'Restarted the shell' }] : [{ text: 'Ran ' }, code(str(args.command) ?? '')];
    case 'str_replace_based_edit_tool': {
      const verb = EDITOR_VERBS[str(args.command) ?? ''] ?? 'Used the editor on';
      return [{ text: `${verb} ` }, code(str(args.path) ?? '')];
    }
    case 'memory': {
      const action = str(args.action) ?? '';
      const line = MEMORY_LINES[action] ?? 'Used the notes';
      return action === 'search' ? [{ text: `${line} ` }, code(str(args.query) ?? '')] : [{ text: line }];
    }
    case 'plan':
      return [{ text: args.action === 'set' ? 'Made a plan' : 'Updated the plan' }];
    case 'delegate': {
      const to = str(args.to);
      return [{ text: `Handed a task${to ? ` to ${to}` : ''}: ` }, code(str(args.prompt) ?? '')];
    }
    default:
      return [{ text: 'Used ' }, code(entry.name)];
  }
}

/** How the step ended, or that it has not yet. */
export function outcome(entry: TimelineEntry): Outcome {
  switch (entry.phase) {
    case 'proposed':
    case 'running':
      return 'running';
    case 'awaiting_approval':
      return 'waiting';
    case 'done':
      return entry.result?.changed === false ? 'no_change' : 'done';
    case 'denied':
      return 'refused';
    case 'failed':
      return 'failed';
    case 'cancelled':
      return 'stopped';
  }
}
