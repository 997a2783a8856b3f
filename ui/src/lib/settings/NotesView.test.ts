import { render, screen, waitFor, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { fakeShell } from '../../test/shell';
import type { Note } from '../types';
import NotesView from './NotesView.svelte';

/** A shell holding notes as the store does: newest first, checked like the core checks. */
function notesShell(initial: string[]) {
  let next = 1;
  const at = '2026-11-20T10:00:00Z';
  let notes: Note[] = initial.map((text) => ({ id: next++, text, session_id: 's1', created_at: at, updated_at: at })).reverse();
  let inPrompt = true;
  const calls = fakeShell((cmd, args) => {
    const a = args as Record<string, unknown>;
    switch (cmd) {
      case 'list_notes':
        return notes;
      case 'search_notes':
        return notes.filter((n) => n.text.toLowerCase().includes(String(a.query).toLowerCase()));
      case 'add_note': {
        const text = String(a.text);
        if (text.includes('sk-ant-')) throw { kind: 'invalid', message: 'refused: this note contains what looks like an Anthropic API key.' };
        const note = { id: next++, text, session_id: null, created_at: at, updated_at: at };
        notes = [note, ...notes];
        return note;
      }
      case 'edit_note': {
        const note = notes.find((n) => n.id === a.id)!;
        note.text = String(a.text);
        return note;
      }
      case 'delete_note':
        notes = notes.filter((n) => n.id !== a.id);
        return null;
      case 'get_memory_in_prompt':
        return inPrompt;
      case 'set_memory_in_prompt':
        inPrompt = Boolean(a.enabled);
        return null;
    }
    return null;
  });
  return { calls, notes: () => notes, inPrompt: () => inPrompt };
}

const texts = () => [...document.querySelectorAll('li[data-note-id] .text')].map((e) => e.textContent);

describe('NotesView', () => {
  it('lists, searches, adds, edits and deletes notes', async () => {
    const user = userEvent.setup();
    const shell = notesShell(['use Firefox, not Chromium', 'invoices are in ~/Documents/Acme']);
    render(NotesView);
    await waitFor(() => expect(texts()).toEqual(['invoices are in ~/Documents/Acme', 'use Firefox, not Chromium']));

    await user.type(screen.getByLabelText('Search notes'), 'firefox');
    await waitFor(() => expect(texts()).toEqual(['use Firefox, not Chromium']));
    await user.clear(screen.getByLabelText('Search notes'));

    await user.type(screen.getByLabelText('New note'), 'the printer is Brother-2');
    await user.click(screen.getByRole('button', { name: 'Add' }));
    await waitFor(() => expect(texts()[0]).toBe('the printer is Brother-2'));

    await user.click(screen.getByRole('button', { name: 'Edit note 1' }));
    const field = screen.getByLabelText('Note text');
    await user.clear(field);
    await user.type(field, 'use Firefox ESR');
    await user.click(screen.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(texts()).toContain('use Firefox ESR'));

    await user.click(screen.getByRole('button', { name: 'Delete note 2' }));
    await waitFor(() => expect(texts()).not.toContain('invoices are in ~/Documents/Acme'));
    expect(shell.notes().map((n) => n.text)).toEqual(['the printer is Brother-2', 'use Firefox ESR']);
  });

  it('shows why a note was refused and keeps what was typed', async () => {
    const user = userEvent.setup();
    const shell = notesShell([]);
    render(NotesView);
    await screen.findByText('No notes yet.');
    await user.type(screen.getByLabelText('New note'), 'my key sk-ant-abc');
    await user.click(screen.getByRole('button', { name: 'Add' }));
    expect((await screen.findByRole('alert')).textContent).toMatch(/^refused/);
    expect((screen.getByLabelText('New note') as HTMLInputElement).value).toBe('my key sk-ant-abc');
    expect(shell.notes()).toEqual([]);
  });

  it('turns notes in the prompt off and on', async () => {
    const user = userEvent.setup();
    const shell = notesShell(['a']);
    render(NotesView);
    const box = (await screen.findByLabelText(/Give each run the notes/)) as HTMLInputElement;
    expect(box.checked).toBe(true);
    await user.click(box);
    await waitFor(() => expect(shell.inPrompt()).toBe(false));
    expect(shell.calls.filter((c) => c.cmd === 'set_memory_in_prompt')).toEqual([
      { cmd: 'set_memory_in_prompt', args: { enabled: false } },
    ]);
    expect(within(document.body).getByLabelText(/Give each run/)).not.toBeChecked();
  });
});
