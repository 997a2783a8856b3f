import { render, screen, waitFor } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { usage } from '../../test/events';
import { fakeShell } from '../../test/shell';
import SessionSidebar from './SessionSidebar.svelte';

const session = (id: string, title: string) => ({
  id,
  title,
  created_at: '2025-01-01T10:00:00Z',
  updated_at: '2025-01-01T10:05:00Z',
  message_count: 4,
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  usage: usage(10, 5),
  cost_usd: 0.0001,
});

function renderSidebar() {
  let titles: Record<string, string> = { a: 'Fix the printer', b: 'Book a flight' };
  const calls = fakeShell((cmd, args) => {
    const a = args as Record<string, string>;
    switch (cmd) {
      case 'list_sessions':
        return Object.entries(titles).map(([id, title]) => session(id, title));
      case 'search_sessions':
        return [{ ...session('b', titles.b!), snippet: '…a flight to Lisbon…' }];
      case 'rename_session':
        titles[a.id!] = a.title!;
        return null;
      case 'delete_session':
        titles = Object.fromEntries(Object.entries(titles).filter(([id]) => id !== a.id));
        return null;
      case 'export_session':
        return `/home/me/Downloads/Book a flight.${a.format === 'json' ? 'json' : 'md'}`;
      case 'list_tasks':
      case 'list_schedules':
        return [];
    }
    return null;
  });
  const props = { activeId: 'a', refresh: 0, onopen: vi.fn(), onnew: vi.fn(), ondeleted: vi.fn() };
  render(SessionSidebar, props);
  return { calls, props };
}

describe('SessionSidebar', () => {
  it('lists sessions and reopens one', async () => {
    const { props } = renderSidebar();
    await userEvent.click(await screen.findByRole('button', { name: /^Book a flight/ }));
    expect(props.onopen).toHaveBeenCalledWith('b');
    // The end-to-end test finds rows by id.
    const rows = document.querySelectorAll<HTMLElement>('li[data-session-id]');
    expect([...rows].map((row) => row.dataset.sessionId)).toEqual(['a', 'b']);
    expect(screen.getByRole('button', { name: /^Fix the printer/ })).toHaveAttribute('aria-current', 'true');
  });

  it('searches the sessions', async () => {
    const { calls } = renderSidebar();
    await screen.findByRole('button', { name: /^Fix the printer/ });
    await userEvent.type(screen.getByLabelText('Search sessions'), 'Lisbon');
    expect(await screen.findByText('…a flight to Lisbon…')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /^Fix the printer/ })).toBeNull();
    expect(calls.at(-1)).toEqual({ cmd: 'search_sessions', args: { query: 'Lisbon' } });
  });

  it('renames, exports and deletes after a confirmation', async () => {
    const { calls, props } = renderSidebar();
    await userEvent.click(await screen.findByRole('button', { name: 'Rename Book a flight' }));
    const field = screen.getByLabelText('Session title');
    await userEvent.clear(field);
    await userEvent.type(field, 'Flight to Lisbon{Enter}');
    expect(await screen.findByRole('button', { name: /^Flight to Lisbon/ })).toBeInTheDocument();
    expect(calls).toContainEqual({ cmd: 'rename_session', args: { id: 'b', title: 'Flight to Lisbon' } });

    await userEvent.click(screen.getByRole('button', { name: 'Export Flight to Lisbon' }));
    expect(await screen.findByText('Exported to /home/me/Downloads/Book a flight.md')).toBeInTheDocument();
    expect(calls).toContainEqual({ cmd: 'export_session', args: { id: 'b', format: 'markdown' } });
    await userEvent.click(screen.getByRole('button', { name: 'Export Flight to Lisbon as JSON' }));
    expect(await screen.findByText('Exported to /home/me/Downloads/Book a flight.json')).toBeInTheDocument();
    expect(calls).toContainEqual({ cmd: 'export_session', args: { id: 'b', format: 'json' } });

    await userEvent.click(screen.getByRole('button', { name: 'Delete Flight to Lisbon' }));
    expect(calls.some((c) => c.cmd === 'delete_session')).toBe(false);
    await userEvent.click(screen.getByRole('button', { name: 'Delete “Flight to Lisbon”' }));
    await waitFor(() => expect(screen.queryByRole('button', { name: /^Flight to Lisbon/ })).toBeNull());
    expect(props.ondeleted).toHaveBeenCalledWith('b');
  });
});
