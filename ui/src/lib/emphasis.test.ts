import { describe, expect, it } from 'vitest';
import { escape, plain, spans } from './emphasis';

describe('emphasis', () => {
  it('makes the names of a summary strong and drops the markup', () => {
    expect(spans('Click **7** (toggle button) in galculator')).toEqual([
      { text: 'Click ' },
      { text: '7', strong: true },
      { text: ' (toggle button) in galculator' },
    ]);
    expect(plain('**a** and **b**')).toBe('a and b');
  });

  it('gives back a name with stars, backslashes or HTML as it was, as the core escapes it', () => {
    for (const name of ['a**b', '**', 'C:\\Users\\', '*x*', '\\**', '<img src=x onerror=alert(1)>']) {
      const summary = `Click **${escape(name)}** in ${escape(name)}`;
      expect(spans(summary)).toEqual([{ text: 'Click ' }, { text: name, strong: true }, { text: ` in ${name}` }]);
    }
  });

  it('reads a marker without its closing one as text', () => {
    expect(spans('2 ** 3')).toEqual([{ text: '2 ** 3' }]);
    expect(spans('**a** 2 ** 3')).toEqual([{ text: 'a', strong: true }, { text: ' 2 ** 3' }]);
    expect(plain('a\\b')).toBe('a\\b');
  });
});
