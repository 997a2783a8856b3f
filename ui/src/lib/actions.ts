// What a tool call does, in a shape the timeline and the approval card can draw. The plan's
// `detail` is tool-specific and may change as tools grow, so every field is read defensively
// and anything unrecognised is shown as JSON.

/** A point in the model's screenshot space (the screenshots the UI shows are in it too). */
export interface Point {
  x: number;
  y: number;
}

export type Marker = Point & { role: 'click' | 'drag_start' | 'drag_end' };

export interface ActionView {
  /** Where a click or drag lands, in model coordinates. */
  markers: Marker[];
  /** Text the action types. */
  typed: string | null;
  /** Keys it presses, e.g. "ctrl+s". */
  keys: string | null;
  command: string | null;
  diff: string | null;
  /** Everything else worth showing, pretty-printed. */
  other: string | null;
}

type Json = Record<string, unknown>;

function asObject(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Json)
    : null;
}

function asPoint(value: unknown): Point | null {
  if (Array.isArray(value) && value.length === 2) {
    const [x, y] = value as unknown[];
    if (typeof x === 'number' && typeof y === 'number') return { x, y };
  }
  return null;
}

function asString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** The model-space point of a detail node: `{model: [x, y]}`, or a bare `[x, y]`. */
function modelPoint(value: unknown): Point | null {
  return asPoint(asObject(value)?.model) ?? asPoint(value);
}

function markersOf(input: Json | null, detail: Json | null): Marker[] {
  const end = modelPoint(detail) ?? asPoint(input?.coordinate);
  const start =
    modelPoint(detail?.start) ?? asPoint(detail?.start_model) ?? asPoint(input?.start_coordinate);
  const markers: Marker[] = [];
  if (start) markers.push({ ...start, role: 'drag_start' });
  if (end) markers.push({ ...end, role: start ? 'drag_end' : 'click' });
  return markers;
}

const CLICK_ACTIONS = /click|drag|mouse_move|scroll/;

export function describeAction(name: string, input: unknown, detail: unknown): ActionView {
  const args = asObject(input);
  const info = asObject(detail);
  const action = asString(args?.action) ?? '';
  const view: ActionView = {
    markers: name === 'computer' && CLICK_ACTIONS.test(action) ? markersOf(args, info) : [],
    typed: null,
    keys: null,
    command: asString(info?.command) ?? (name === 'bash' ? asString(args?.command) : null),
    diff: asString(info?.diff),
    other: null,
  };
  if (name === 'computer' && action === 'type') view.typed = asString(args?.text);
  if (name === 'computer' && (action === 'key' || action === 'hold_key')) {
    view.keys = asString(args?.text) ?? asString(args?.key);
  }
  const shown = view.markers.length || view.typed || view.keys || view.command || view.diff;
  if (!shown && detail !== null && detail !== undefined) view.other = JSON.stringify(detail, null, 2);
  else if (!shown && name !== 'computer' && input !== null && input !== undefined) {
    view.other = JSON.stringify(input, null, 2);
  }
  return view;
}

/** A marker's position as percentages of an image of the given natural size. */
export function markerPosition(point: Point, width: number, height: number): { left: string; top: string } {
  const pct = (value: number, total: number) =>
    `${(Math.min(Math.max(value / total, 0), 1) * 100).toFixed(2)}%`;
  return { left: pct(point.x, width), top: pct(point.y, height) };
}
