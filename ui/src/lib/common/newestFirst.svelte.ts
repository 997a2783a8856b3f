import { tick } from 'svelte';

/**
 * Items added to a long list per frame: small enough that a frame stays under ~50 ms with
 * JavaScript interpreted (the window runs WebKit without its JIT, src-tauri/src/webkit_env.rs).
 */
export const CHUNK = 10;

/**
 * Draws a long list's newest items at once and the older ones a chunk per frame. A reopened
 * session arrives whole, and building its 500 messages and 100 screenshots in one go froze
 * the window for a frame (~190 ms); a chunk a frame keeps every frame short.
 *
 * `key` changes when another list is shown (another session): drawing starts over.
 * `anchor` is the element that must stay put on screen while older items appear above it.
 * Call it while a component initialises.
 */
export function newestFirst(length: () => number, key: () => unknown, anchor: () => Element | null) {
  let limit = $state(CHUNK);
  $effect.pre(() => {
    key();
    limit = CHUNK;
  });
  $effect(() => {
    if (length() <= limit) return;
    const frame = requestAnimationFrame(async () => {
      const restore = keepInPlace(anchor());
      limit += CHUNK;
      await tick();
      restore();
    });
    return () => cancelAnimationFrame(frame);
  });
  return {
    /** The index of the first item to draw. */
    get from() {
      return Math.max(0, length() - limit);
    },
  };
}

/** Scrolls `element`'s scrolling container back so that it stays where it is now on screen. */
function keepInPlace(element: Element | null): () => void {
  const before = element?.getBoundingClientRect().top ?? 0;
  return () => {
    if (!element) return;
    const moved = element.getBoundingClientRect().top - before;
    let box = element.parentElement;
    while (box && box.scrollHeight <= box.clientHeight) box = box.parentElement;
    if (moved) box?.scrollBy?.(0, moved);
  };
}
