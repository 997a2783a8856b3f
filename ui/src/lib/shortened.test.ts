import { describe, expect, it } from 'vitest';
import { shortened } from './shortened';

describe('shortened', () => {
  it('keeps a short text whole', () => {
    expect(shortened('short', 10)).toBe('short');
    expect(shortened('exactly10!', 10)).toBe('exactly10!');
  });

  it('says a long text was cut, and how long it is, counting characters as the core does', () => {
    expect(shortened('é'.repeat(1234), 3)).toBe('ééé… (1,234 characters)');
    expect(shortened('😀'.repeat(5), 2)).toBe('😀😀… (5 characters)');
  });
});
