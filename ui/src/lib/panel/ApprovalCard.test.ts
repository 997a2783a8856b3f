import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';
import { approvalRequest, image, started, toolCall } from '../../test/events';
import { fakeShell, loadImage, type ShellCall } from '../../test/shell';
import { RunStore } from '../run/runStore.svelte';
import ApprovalCard from './ApprovalCard.svelte';

/** A card wired to a real store over a fake shell, as the app wires it. */
function renderCard(request = approvalRequest('t1')) {
  const calls: ShellCall[] = fakeShell();
  const store = new RunStore();
  store.apply(started());
  store.apply(toolCall(request.tool_use_id));
  store.apply({ type: 'approval_needed', request });
  render(ApprovalCard, {
    request,
    screen: image('current'),
    deciding: false,
    ondecide: (decision) => void store.decide(decision),
  });
  const approvals = () => calls.filter((c) => c.cmd === 'approve').map((c) => c.args);
  return { approvals };
}

describe('ApprovalCard', () => {
  it('approves on Enter', async () => {
    const { approvals } = renderCard();
    await userEvent.keyboard('{Enter}');
    expect(approvals()).toEqual([{ toolUseId: 't1', decision: { decision: 'approve' } }]);
  });

  it('denies on Esc with no reason', async () => {
    const { approvals } = renderCard();
    await userEvent.keyboard('{Escape}');
    expect(approvals()).toEqual([{ toolUseId: 't1', decision: { decision: 'deny', reason: null } }]);
  });

  it('passes the typed reason with a denial', async () => {
    const { approvals } = renderCard();
    await userEvent.type(screen.getByLabelText(/Reason for denying/), 'not that window');
    await userEvent.keyboard('{Escape}');
    expect(approvals()).toEqual([
      { toolUseId: 't1', decision: { decision: 'deny', reason: 'not that window' } },
    ]);
  });

  it('does not approve when Enter is pressed in the reason field', async () => {
    const { approvals } = renderCard();
    await userEvent.type(screen.getByLabelText(/Reason for denying/), 'stop{Enter}');
    expect(approvals()).toEqual([{ toolUseId: 't1', decision: { decision: 'deny', reason: 'stop' } }]);
  });

  it('always allows the kind for this session', async () => {
    const { approvals } = renderCard();
    await userEvent.click(screen.getByRole('button', { name: /Always allow computer.left_click/ }));
    expect(approvals()).toEqual([{ toolUseId: 't1', decision: { decision: 'approve_kind' } }]);
  });

  it('shows where the click will land on the current screenshot, and the command of a bash action', async () => {
    renderCard();
    expect(screen.getByText('left_click at (100, 50) → screen (150, 75)')).toBeInTheDocument();
    const img = (await screen.findByAltText('Where the action will land')) as HTMLImageElement;
    loadImage(img, 400, 200);
    const marker = await screen.findByTestId('marker');
    expect([marker.style.left, marker.style.top]).toEqual(['25%', '25%']);
  });

  it('shows the command a bash action will run', () => {
    renderCard(
      approvalRequest('t2', {
        tool: 'bash',
        kind: 'bash',
        input: { command: 'rm -rf build' },
        summary: 'run a command',
        detail: { command: 'rm -rf build' },
      }),
    );
    expect(screen.getByLabelText('Command')).toHaveTextContent('$ rm -rf build');
    expect(screen.queryByAltText('Where the action will land')).toBeNull();
  });
});
