// A fake Tauri shell for component tests: records every command and answers a few.
import { mockIPC } from '@tauri-apps/api/mocks';

export interface ShellCall {
  cmd: string;
  args: unknown;
}

export const PNG_BYTES = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]);

export function fakeShell(reply: (cmd: string, args: unknown) => unknown = () => null): ShellCall[] {
  const calls: ShellCall[] = [];
  mockIPC((cmd, args) => {
    calls.push({ cmd, args });
    if (cmd === 'get_image') return PNG_BYTES.buffer.slice(0);
    return reply(cmd, args);
  });
  return calls;
}

/** Gives a loaded <img> the natural size a real image would have, and fires its load event. */
export function loadImage(img: HTMLImageElement, width: number, height: number): void {
  Object.defineProperty(img, 'naturalWidth', { value: width, configurable: true });
  Object.defineProperty(img, 'naturalHeight', { value: height, configurable: true });
  img.dispatchEvent(new Event('load'));
}
