import { describe, expect, it } from 'vitest';
import { showInvisible } from './invisible';

describe('showInvisible', () => {
  it('escapes bidi controls, zero-width characters and controls, not newlines or tabs', () => {
    const text = 'a\u202Eb\u2066c\u200Bd\u2060e\uFEFFf\u001b[2Kg\rh\u0085i\n\tj';
    expect(showInvisible(text)).toEqual({
      text: 'a\\u{202e}b\\u{2066}c\\u{200b}d\\u{2060}e\\u{feff}f\\u{1b}[2Kg\\u{d}h\\u{85}i\n\tj',
      escaped: 8,
    });
    expect(showInvisible('ls -la ~/Downloads')).toEqual({ text: 'ls -la ~/Downloads', escaped: 0 });
  });
});
