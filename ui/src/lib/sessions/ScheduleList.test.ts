import { render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import { fakeShell } from '../../test/shell';
import type { Schedule } from '../types';
import ScheduleList from './ScheduleList.svelte';

const schedule = (name: string, extra: Partial<Schedule> = {}): Schedule => ({
  id: `id-${name}`,
  name,
  trigger: { kind: 'every', seconds: 7200 },
  prompt: 'tidy the desk',
  session: null,
  agent_desktop: false,
  check: null,
  scope: { tools: [] },
  max_cost_usd: null,
  catch_up: 'once',
  overlap: 'skip',
  approval_deadline_secs: 3600,
  pause_after_failures: 3,
  paused: false,
  paused_reason: null,
  last_due: null,
  next_due: '2026-11-29T11:00:00Z',
  failures_in_a_row: 0,
  created_at: '2026-11-29T09:00:00Z',
  ...extra,
});

describe('ScheduleList', () => {
  it('shows each schedule with when it runs, its next time, or why it paused itself', async () => {
    fakeShell((cmd) =>
      cmd === 'list_schedules'
        ? [
            schedule('tidy'),
            schedule('report\u202e', {
              trigger: { kind: 'cron', expr: '0 9 * * 1-5', tz: 'Europe/Paris' },
              paused: true,
              paused_reason: 'paused itself after 3 failed runs in a row',
              next_due: null,
            }),
          ]
        : null,
    );
    render(ScheduleList);
    expect(await screen.findByText('every 7200 s · next 2026-11-29T11:00:00Z')).toBeInTheDocument();
    expect(
      screen.getByText('cron 0 9 * * 1-5 (Europe/Paris) · paused: paused itself after 3 failed runs in a row'),
    ).toBeInTheDocument();
    expect(screen.getByText('report\\u{202e}')).toBeInTheDocument();
  });

  it('shows nothing when there is no schedule', async () => {
    fakeShell((cmd) => (cmd === 'list_schedules' ? [] : null));
    render(ScheduleList);
    await Promise.resolve();
    expect(screen.queryByRole('region', { name: 'Schedules' })).toBeNull();
  });
});
