import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { approvalRequest, image, started, toolCall, toolResult } from '../../test/events';
import { fakeShell, loadImage } from '../../test/shell';
import { applyEvent } from '../run/reduce';
import { initialRunState } from '../run/state';
import type { AgentEvent } from '../types';
import Timeline from './Timeline.svelte';

function entries(...events: AgentEvent[]) {
  const state = initialRunState();
  for (const event of events) applyEvent(state, event, 0);
  return state.timeline;
}

describe('Timeline', () => {
  it('marks a step that changed nothing and the step where the agent looked stuck', () => {
    render(Timeline, {
      entries: entries(
        started(),
        toolCall('t1'),
        toolResult('t1', { changed: false }),
        toolCall('t2'),
        toolResult('t2', { changed: true }),
        {
          type: 'stall_detected',
          pattern: 'cycle',
          steps: ['t1', 't2'],
          step: 'stalled',
          message: 'the last 2 actions went round in a cycle',
        },
      ),
      onopen: vi.fn(),
    });
    expect(screen.getAllByTestId('no-change')).toHaveLength(1);
    const stall = screen.getByTestId('stall');
    expect(stall.dataset.step).toBe('stalled');
    expect(stall).toHaveTextContent('Stuck, run ended: the last 2 actions went round in a cycle');
  });

  it('says which front end answered, and names a program that answered through the API', () => {
    render(Timeline, {
      entries: entries(
        started(),
        toolCall('t1'),
        { type: 'approval_decided', id: 't1', decision: 'approve', by: 'window' },
        toolCall('t2'),
        {
          type: 'approval_decided',
          id: 't2',
          decision: 'approve',
          by: 'api',
          client: 'a client on the API\'s socket (pid 42, uid 1000)',
        },
      ),
      onopen: vi.fn(),
    });
    const decisions = [...document.querySelectorAll('.decision')].map((p) =>
      p.textContent?.replace(/\s+/g, ' ').trim(),
    );
    expect(decisions).toEqual([
      'Approved by you, in the window',
      "Approved by a program through the local API (a client on the API's socket (pid 42, uid 1000))",
    ]);
  });

  it('draws a click marker where the plan says, scaled to the screenshot', async () => {
    const calls = fakeShell();
    render(Timeline, {
      entries: entries(
        started(),
        toolCall('t1'),
        { type: 'approval_needed', request: approvalRequest('t1', {
            detail: {
              action: 'left_click',
              model_points: [[300, 200]],
              screen_points: [{ x: 450, y: 300 }],
              model_size: { width: 1200, height: 800 },
            },
          }) },
        { type: 'approval_decided', id: 't1', decision: 'approve', by: 'user' },
        toolResult('t1', { images: [image('shot1')], ms: 250 }),
      ),
      onopen: vi.fn(),
    });
    const img = (await screen.findByAltText(/Screen after/)) as HTMLImageElement;
    expect(img.src).toMatch(/^blob:/);
    expect(screen.queryByTestId('marker')).toBeNull();
    loadImage(img, 1200, 800);
    const marker = await screen.findByTestId('marker');
    expect(marker.style.left).toBe('25%');
    expect(marker.style.top).toBe('25%');
    expect(screen.getByText('250 ms')).toBeInTheDocument();
    expect(screen.getByText(/Approved\s+by you/)).toBeInTheDocument();
    // The pixels came as binary from get_image, by hash.
    expect(calls).toEqual([{ cmd: 'get_image', args: { sha256: 'shot1' } }]);
  });

  it('draws both ends of a drag from the input when no plan was shown', async () => {
    fakeShell();
    render(Timeline, {
      entries: entries(
        toolCall('t1', 'computer', { action: 'left_click_drag', start_coordinate: [0, 0], coordinate: [640, 400] }),
        { type: 'approval_decided', id: 't1', decision: 'approve', by: 'policy' },
        toolResult('t1', { images: [image('shot2')] }),
      ),
      onopen: vi.fn(),
    });
    loadImage((await screen.findByAltText(/Screen after/)) as HTMLImageElement, 1280, 800);
    const markers = await screen.findAllByTestId('marker');
    expect(markers.map((m) => [m.title, m.style.left, m.style.top])).toEqual([
      ['drag from (0, 0)', '0%', '0%'],
      ['drag to (640, 400)', '50%', '50%'],
    ]);
  });

  it('shows typed text, keys, bash commands with output, and diffs', () => {
    fakeShell();
    render(Timeline, {
      entries: entries(
        toolCall('t1', 'computer', { action: 'type', text: 'hello world' }),
        toolCall('t2', 'computer', { action: 'key', text: 'ctrl+s' }),
        toolCall('t3', 'bash', { command: 'ls /tmp' }),
        toolResult('t3', { name: 'bash', text: 'a.txt\nb.txt' }),
        toolCall('t4', 'str_replace_based_edit_tool', { command: 'str_replace', path: '/a' }),
        {
          type: 'approval_needed',
          request: approvalRequest('t4', {
            tool: 'str_replace_based_edit_tool',
            kind: 'editor.str_replace',
            summary: 'edit /a',
            detail: { path: '/a', diff: '--- a\n+++ a\n-old\n+new' },
          }),
        },
      ),
      onopen: vi.fn(),
    });
    expect(screen.getByText('hello world')).toBeInTheDocument();
    expect(screen.getByText('ctrl+s').tagName).toBe('KBD');
    expect(screen.getByLabelText('Command')).toHaveTextContent('$ ls /tmp');
    expect(screen.getByLabelText('Output')).toHaveTextContent('a.txt b.txt');
    const diff = screen.getByLabelText('File changes');
    expect(within(diff).getByText('+new')).toHaveClass('add');
    expect(within(diff).getByText('-old')).toHaveClass('del');
    expect(screen.getByText('waiting for you')).toBeInTheDocument();
  });

  it('shows other detail shapes, such as a plugin call, as JSON', () => {
    fakeShell();
    render(Timeline, {
      entries: entries(
        toolCall('t1', 'mcp_thing', { x: 1 }),
        { type: 'approval_needed', request: approvalRequest('t1', {
            tool: 'mcp_thing',
            detail: { server: 'things', tool: 'thing', arguments: { weird: [1, 2, 3] } },
          }) },
      ),
      onopen: vi.fn(),
    });
    expect(screen.getByText(/"weird"/)).toBeInTheDocument();
  });

  it('opens a screenshot large when clicked', async () => {
    fakeShell();
    const onopen = vi.fn();
    render(Timeline, { entries: entries(toolCall('t1'), toolResult('t1', { images: [image('big')] })), onopen });
    await userEvent.click(screen.getByRole('button', { name: /Open Screen after/ }));
    expect(onopen).toHaveBeenCalledWith(image('big'));
  });
});
