import { mockIPC } from '@tauri-apps/api/mocks';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import Composer from './Composer.svelte';

function shell() {
  const calls: { cmd: string; args: unknown }[] = [];
  let next = 0;
  mockIPC((cmd, args) => {
    calls.push({ cmd, args });
    if (cmd === 'capture_screen' || cmd === 'attach_image') {
      next += 1;
      return { id: `att${next}`, sha256: `hash${next}`, media_type: 'image/png', width: 1280, height: 800 };
    }
    if (cmd === 'get_image') return new Uint8Array([137, 80, 78, 71]).buffer;
    return null;
  });
  return calls;
}

describe('Composer', () => {
  it('sends on Enter and adds a newline on Shift+Enter', async () => {
    shell();
    const onsend = vi.fn();
    render(Composer, { busy: false, onsend });
    const box = screen.getByLabelText('Message text');
    await userEvent.type(box, 'first line{Shift>}{Enter}{/Shift}second');
    expect(onsend).not.toHaveBeenCalled();
    expect(box).toHaveValue('first line\nsecond');
    await userEvent.type(box, '{Enter}');
    expect(onsend).toHaveBeenCalledWith('first line\nsecond', []);
    expect(box).toHaveValue('');
  });

  it('does not send while a run is going, nor an empty message', async () => {
    shell();
    const onsend = vi.fn();
    const { rerender } = render(Composer, { busy: false, onsend });
    const box = screen.getByLabelText('Message text');
    await userEvent.type(box, '{Enter}');
    expect(onsend).not.toHaveBeenCalled();
    await rerender({ busy: true, onsend });
    await userEvent.type(box, 'hello{Enter}');
    expect(onsend).not.toHaveBeenCalled();
    expect(screen.getByRole('button', { name: 'Send' })).toBeDisabled();
  });

  it('attaches a screenshot as a removable thumbnail and sends its id', async () => {
    const calls = shell();
    const onsend = vi.fn();
    render(Composer, { busy: false, onsend });
    await userEvent.click(screen.getByRole('button', { name: 'Attach screenshot' }));
    await userEvent.click(screen.getByRole('button', { name: 'Attach screenshot' }));
    const removes = await screen.findAllByRole('button', { name: 'Remove screenshot' });
    expect(removes).toHaveLength(2);
    await waitFor(() => expect(calls.filter((c) => c.cmd === 'get_image')).toHaveLength(2));

    await userEvent.click(removes[0]!);
    expect(calls.at(-1)).toEqual({ cmd: 'discard_attachment', args: { id: 'att1' } });
    await userEvent.type(screen.getByLabelText('Message text'), 'what is this?{Enter}');
    expect(onsend).toHaveBeenCalledWith('what is this?', [{ id: 'att2' }]);
    expect(screen.queryByRole('button', { name: 'Remove screenshot' })).toBeNull();
  });

  it('sends a chosen file as raw bytes, and refuses non-images', async () => {
    const calls = shell();
    render(Composer, { busy: false, onsend: vi.fn() });
    const input = screen.getByTestId('file-input') as HTMLInputElement;
    const png = new File([new Uint8Array([137, 80, 78, 71, 1, 2])], 'shot.png', { type: 'image/png' });
    await userEvent.upload(input, png);
    await screen.findByRole('button', { name: 'Remove shot.png' });
    const attach = calls.find((c) => c.cmd === 'attach_image');
    expect(attach?.args).toBeInstanceOf(Uint8Array);
    expect([...(attach?.args as Uint8Array)]).toEqual([137, 80, 78, 71, 1, 2]);

    const text = new File(['hello'], 'notes.txt', { type: 'text/plain' });
    await fireEvent.change(input, { target: { files: [text] } });
    expect(await screen.findByRole('alert')).toHaveTextContent('notes.txt is not an image');
  });

  it('attaches images pasted or dropped', async () => {
    const calls = shell();
    render(Composer, { busy: false, onsend: vi.fn() });
    const png = new File([new Uint8Array([1])], 'clip.png', { type: 'image/png' });
    await fireEvent.paste(screen.getByLabelText('Message text'), {
      clipboardData: { files: [png], types: ['Files'] },
    });
    await fireEvent.drop(screen.getByRole('form', { name: 'Message' }), {
      dataTransfer: { files: [new File([new Uint8Array([2])], 'drop.png', { type: 'image/png' })] },
    });
    await screen.findByRole('button', { name: 'Remove drop.png' });
    expect(screen.getByRole('button', { name: 'Remove clip.png' })).toBeInTheDocument();
    expect(calls.filter((c) => c.cmd === 'attach_image')).toHaveLength(2);
  });
});
