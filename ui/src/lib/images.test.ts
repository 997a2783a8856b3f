import { afterEach, describe, expect, it, vi } from 'vitest';
import { imageUrl, releaseImages } from './images';
import { fakeShell, PNG_BYTES } from '../test/shell';

afterEach(() => {
  releaseImages();
  vi.restoreAllMocks();
});

describe('imageUrl', () => {
  it('fetches each image once and shares its blob URL', async () => {
    const calls = fakeShell();
    const first = await imageUrl('a', 'image/png');
    expect(await imageUrl('a', 'image/png')).toBe(first);
    expect(calls.filter((c) => c.cmd === 'get_image')).toHaveLength(1);
  });

  it('lets the least recently asked for blobs go beyond its budget, and fetches them again', async () => {
    const calls = fakeShell();
    const revoked: string[] = [];
    vi.spyOn(URL, 'revokeObjectURL').mockImplementation((url) => revoked.push(url));
    // Two images fit (8 bytes each), a third does not.
    const budget = 2 * PNG_BYTES.byteLength;
    const a = await imageUrl('a', 'image/png', budget);
    const b = await imageUrl('b', 'image/png', budget);
    await imageUrl('a', 'image/png', budget); // asked for again: now b is the oldest
    await imageUrl('c', 'image/png', budget);
    await Promise.resolve();
    expect(revoked).toEqual([b]);
    expect(await imageUrl('a', 'image/png', budget)).toBe(a);
    await imageUrl('b', 'image/png', budget);
    const fetched = calls.filter((c) => c.cmd === 'get_image').map((c) => (c.args as { sha256: string }).sha256);
    expect(fetched).toEqual(['a', 'b', 'c', 'b']);
  });
});
