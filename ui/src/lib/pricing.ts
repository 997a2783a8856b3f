// List prices in US dollars per million tokens, for the usage meter's estimate.
import type { Usage } from './types';

interface Price {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

const PRICES: [RegExp, Price][] = [
  [/claude-opus-4-[56]/, { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5 }],
  [/claude-opus-4/, { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 }],
  [/claude-sonnet-4|claude-3-7-sonnet/, { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 }],
  [/claude-haiku-4/, { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 }],
  [/claude-3-5-haiku/, { input: 0.8, output: 4, cacheWrite: 1, cacheRead: 0.08 }],
];

/** The estimated cost in dollars, or null for a model without a known price. */
export function estimateCost(model: string | null, usage: Usage): number | null {
  const price = model ? PRICES.find(([pattern]) => pattern.test(model))?.[1] : undefined;
  if (!price) return null;
  return (
    (usage.input_tokens * price.input +
      usage.output_tokens * price.output +
      usage.cache_creation_input_tokens * price.cacheWrite +
      usage.cache_read_input_tokens * price.cacheRead) /
    1_000_000
  );
}
