// What a tool call does, in a shape the timeline and the approval card can draw. The plan's
// `detail` is the core's `ActionDetail` (one shape per kind of action); a call the mode
// allowed without asking has no plan, and is drawn from its input. A detail of a shape this
// window does not know (from a newer core) is shown as JSON.

import type { ActionDetail, PointerDetail } from './types';

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

function isPointer(detail: ActionDetail | undefined): detail is PointerDetail {
  return Array.isArray(asObject(detail)?.model_points);
}

/** The points an action lands on, in order (a drag's start, then its end). */
function pointsOf(input: Json | null, detail: ActionDetail | undefined): Point[] {
  if (isPointer(detail)) return detail.model_points.map(asPoint).filter((p) => p !== null);
  return [asPoint(input?.start_coordinate), asPoint(input?.coordinate)].filter((p) => p !== null);
}

function markersOf(points: Point[]): Marker[] {
  if (points.length === 2) {
    const [start, end] = points as [Point, Point];
    return [
      { ...start, role: 'drag_start' },
      { ...end, role: 'drag_end' },
    ];
  }
  return points.map((point) => ({ ...point, role: 'click' }));
}

const CLICK_ACTIONS = /click|drag|mouse_move|scroll/;

export function describeAction(
  name: string,
  input: unknown,
  detail: ActionDetail | undefined,
): ActionView {
  const args = asObject(input);
  const info = asObject(detail);
  const action = (isPointer(detail) ? detail.action : asString(args?.action)) ?? '';
  const pointed = isPointer(detail) || name === 'computer';
  const view: ActionView = {
    markers: pointed && CLICK_ACTIONS.test(action) ? markersOf(pointsOf(args, detail)) : [],
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
