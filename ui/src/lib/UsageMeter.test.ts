import { render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import UsageMeter from './UsageMeter.svelte';

const usage = { input_tokens: 1200, output_tokens: 300, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

describe('UsageMeter', () => {
  it('says when older messages go as a summary, and nothing while none do', () => {
    const { rerender } = render(UsageMeter, { usage, cost: null });
    expect(screen.queryByTestId('context-summarized')).toBeNull();
    rerender({ usage, cost: null, summarized: { upto: 12, tokensBefore: 150_000, tokensAfter: 9_000 } });
    expect(screen.getByTestId('context-summarized')).toHaveTextContent(
      'first 12 messages summarized (150k → 9,000 tokens)',
    );
  });

  it('labels a cost at a reseller price, and says nothing of an official one', () => {
    const { rerender } = render(UsageMeter, { usage, cost: 0.0123, priceSource: 'official' });
    expect(screen.getByTestId('usage-meter')).toHaveTextContent('$0.012');
    expect(screen.getByTestId('usage-meter')).not.toHaveTextContent('reseller');
    rerender({ usage, cost: 0.0123, priceSource: 'reseller' });
    expect(screen.getByTestId('usage-meter')).toHaveTextContent('$0.012 (reseller price)');
    expect(screen.getByTestId('usage-meter').title).toContain('likely, not certain');
  });
});
