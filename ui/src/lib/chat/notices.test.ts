import { render, screen } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { errorNotice } from '../run/errors';
import ErrorNotice from './ErrorNotice.svelte';
import RetryNotice from './RetryNotice.svelte';

afterEach(() => vi.useRealTimers());

describe('RetryNotice', () => {
  it('counts down the seconds to the next attempt', async () => {
    vi.useFakeTimers();
    let now = 10_000;
    render(RetryNotice, {
      retry: { attempt: 2, error: 'anthropic: rate limited (HTTP 429)', kind: 'rate_limited', at: 15_000 },
      now: () => now,
    });
    expect(screen.getByRole('status')).toHaveTextContent('Rate limited; retrying in 5 s (attempt 2).');
    now = 12_100;
    await vi.advanceTimersByTimeAsync(300);
    expect(screen.getByRole('status')).toHaveTextContent('retrying in 3 s');
    now = 16_000;
    await vi.advanceTimersByTimeAsync(300);
    expect(screen.getByRole('status')).toHaveTextContent('retrying in 0 s');
  });
});

describe('ErrorNotice', () => {
  it('says what to do, and offers Settings for key problems only', async () => {
    const onsettings = vi.fn();
    const { unmount } = render(ErrorNotice, {
      error: errorNotice('no API key for anthropic', 'no_key'),
      onsettings,
    });
    expect(screen.getByRole('alert')).toHaveTextContent('Add an API key in Settings');
    await userEvent.click(screen.getByRole('button', { name: 'Open Settings' }));
    expect(onsettings).toHaveBeenCalled();
    unmount();

    render(ErrorNotice, { error: errorNotice('anthropic: the service is overloaded (HTTP 529)', 'overloaded'), onsettings });
    expect(screen.getByRole('alert')).toHaveTextContent('overloaded. Try again in a minute.');
    expect(screen.queryByRole('button')).toBeNull();
  });
});
