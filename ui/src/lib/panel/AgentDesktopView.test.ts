import { mockIPC } from '@tauri-apps/api/mocks';
import type { Channel } from '@tauri-apps/api/core';
import { render, screen, waitFor } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import AgentDesktopView from './AgentDesktopView.svelte';
import { takeOverKeys, viewToDesktop } from './takeOver';

const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xd9]);

/** A shell with a 1280x800 agent desktop; `frame()` sends one through the live view's channel. */
function desktopShell() {
  const calls: { cmd: string; args: Record<string, unknown> }[] = [];
  let channel: Channel<ArrayBuffer> | null = null;
  mockIPC((cmd, payload) => {
    const args = (payload ?? {}) as Record<string, unknown>;
    calls.push({ cmd, args });
    if (cmd === 'watch_agent_desktop') {
      channel = args.onFrame as Channel<ArrayBuffer>;
      return { display: ':100', screen: { width: 1280, height: 800 } };
    }
    return null;
  });
  const frame = () => channel?.onmessage(JPEG.buffer.slice(0));
  const inputs = () => calls.filter((c) => c.cmd === 'take_over_input').map((c) => c.args.input);
  return { calls, frame, inputs };
}

const agent = { agent: true, sandbox: true, keep: true };

describe('AgentDesktopView', () => {
  it('chooses where the agent works, with the sandbox on by default', async () => {
    mockIPC(() => null);
    const onchoose = vi.fn();
    render(AgentDesktopView, {
      sessionId: null,
      choice: { agent: false, sandbox: true, keep: false },
      busy: false,
      onchoose,
    });
    await userEvent.click(screen.getByLabelText('its own desktop'));
    expect(onchoose).toHaveBeenCalledWith({ agent: true, sandbox: true, keep: false });
    expect(screen.queryByRole('application')).toBeNull();
  });

  it('shows frames and sends the clicks and keys of the person who took over, mapped to the desktop', async () => {
    const shell = desktopShell();
    URL.createObjectURL = vi.fn(() => 'blob:frame');
    URL.revokeObjectURL = vi.fn();
    render(AgentDesktopView, { sessionId: 's1', choice: agent, busy: false, onchoose: vi.fn() });
    await waitFor(() => expect(shell.calls.some((c) => c.cmd === 'watch_agent_desktop')).toBe(true));
    expect(screen.getByRole('button', { name: 'Take over' })).toBeDisabled();
    shell.frame();
    const image = await screen.findByAltText("The agent's desktop");
    image.getBoundingClientRect = () => ({ left: 0, top: 0, width: 320, height: 200 }) as DOMRect;
    // Not in control: a click goes nowhere.
    await userEvent.click(image);
    expect(shell.inputs()).toEqual([]);

    await userEvent.click(screen.getByRole('button', { name: 'Take over' }));
    expect(screen.getByRole('status')).toHaveTextContent('You have control');
    await userEvent.pointer({ keys: '[MouseLeft]', target: image, coords: { clientX: 160, clientY: 50 } });
    await userEvent.keyboard('a{Enter}{Control>}c{/Control}');
    await waitFor(() => expect(shell.inputs()).toHaveLength(4));
    expect(shell.inputs()).toEqual([
      { kind: 'click', x: 640, y: 200, button: 'left' },
      { kind: 'text', text: 'a' },
      { kind: 'key', keys: 'Return' },
      { kind: 'key', keys: 'ctrl+c' },
    ]);

    // Escape hands back, and is not sent.
    await userEvent.keyboard('{Escape}');
    expect(screen.queryByText('You have control')).toBeNull();
    expect(screen.getByRole('button', { name: 'Take over' })).toBeEnabled();
    await userEvent.click(image);
    expect(shell.inputs()).toHaveLength(4);
  });

  it('stops the live view when the desktop is no longer kept', async () => {
    const shell = desktopShell();
    const { rerender } = render(AgentDesktopView, { sessionId: 's1', choice: agent, busy: false, onchoose: vi.fn() });
    await waitFor(() => expect(shell.calls.some((c) => c.cmd === 'watch_agent_desktop')).toBe(true));
    await rerender({ sessionId: 's1', choice: { ...agent, keep: false }, busy: false, onchoose: vi.fn() });
    await waitFor(() => expect(shell.calls.some((c) => c.cmd === 'unwatch_agent_desktop')).toBe(true));
    expect(screen.queryByRole('application')).toBeNull();
  });
});

describe('take-over mapping', () => {
  it('maps the scaled view to desktop pixels, inside the desktop', () => {
    const shown = { width: 320, height: 200 };
    const desktop = { width: 1280, height: 800 };
    expect(viewToDesktop(0, 0, shown, desktop)).toEqual({ x: 0, y: 0 });
    expect(viewToDesktop(319.9, 199.9, shown, desktop)).toEqual({ x: 1279, y: 799 });
    expect(viewToDesktop(400, -5, shown, desktop)).toEqual({ x: 1279, y: 0 });
  });

  it('names keys as xdotool does and ignores lone modifiers', () => {
    const key = (key: string, mods: Partial<KeyboardEvent> = {}) =>
      takeOverKeys({ key, ctrlKey: false, altKey: false, metaKey: false, shiftKey: false, ...mods });
    expect(key('x')).toEqual({ kind: 'text', text: 'x' });
    expect(key('X', { shiftKey: true })).toEqual({ kind: 'text', text: 'X' });
    expect(key('Tab', { shiftKey: true })).toEqual({ kind: 'key', keys: 'shift+Tab' });
    expect(key('s', { ctrlKey: true })).toEqual({ kind: 'key', keys: 'ctrl+s' });
    expect(key('F5')).toEqual({ kind: 'key', keys: 'F5' });
    expect(key('Shift')).toBeNull();
    expect(key('Unidentified')).toBeNull();
  });
});
