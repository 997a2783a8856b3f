// Take-over input: a point in the scaled live view as a point on the agent desktop, and a key
// of the page as what the core's take-over takes (typed text, or xdotool key names).
import type { TakeOverInput } from '../ipc';

/** The desktop pixel under (x, y) of a view `shown` at its size, clamped inside the desktop. */
export function viewToDesktop(
  x: number,
  y: number,
  shown: { width: number; height: number },
  screen: { width: number; height: number },
): { x: number; y: number } {
  const scale = (value: number, from: number, to: number) =>
    Math.min(to - 1, Math.max(0, Math.floor((value / Math.max(from, 1)) * to)));
  return { x: scale(x, shown.width, screen.width), y: scale(y, shown.height, screen.height) };
}

/** The page's key names that differ from xdotool's. */
const NAMES: Record<string, string> = {
  Enter: 'Return',
  Backspace: 'BackSpace',
  Tab: 'Tab',
  Delete: 'Delete',
  Home: 'Home',
  End: 'End',
  PageUp: 'Page_Up',
  PageDown: 'Page_Down',
  ArrowLeft: 'Left',
  ArrowRight: 'Right',
  ArrowUp: 'Up',
  ArrowDown: 'Down',
  Insert: 'Insert',
  ' ': 'space',
};

const MODIFIER_KEYS = new Set(['Control', 'Shift', 'Alt', 'Meta', 'AltGraph', 'CapsLock']);

/**
 * What a key press sends: a character as typed text, a combination or a special key as
 * xdotool names (`ctrl+c`, `Return`), nothing for a lone modifier or a key it cannot name.
 */
export function takeOverKeys(event: Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'altKey' | 'metaKey' | 'shiftKey'>): TakeOverInput | null {
  const { key } = event;
  if (MODIFIER_KEYS.has(key)) return null;
  const combined = event.ctrlKey || event.altKey || event.metaKey;
  if (key.length === 1 && !combined) return { kind: 'text', text: key };
  const name = NAMES[key] ?? (/^F\d{1,2}$/.test(key) ? key : key.length === 1 ? key.toLowerCase() : null);
  if (!name) return null;
  const modifiers = [
    event.ctrlKey && 'ctrl',
    event.altKey && 'alt',
    event.metaKey && 'super',
    event.shiftKey && key.length !== 1 && 'shift',
  ].filter(Boolean);
  return { kind: 'key', keys: [...modifiers, name].join('+') };
}
