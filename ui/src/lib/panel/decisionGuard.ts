// A card that takes a decision from the person (an approval, a stall question) counts an
// input only if the person can have seen the card. A reply can ask for two actions in a row
// and time them to the person's typing, so: for SETTLE_MS after the card appears every input
// is ignored, as are repeated keys and keys already down when it appeared, and a button acts
// on Enter (or Space, on release) through these checks, not the browser's own activation.

/** How long a new card is on screen before it takes a decision. */
export const SETTLE_MS = 700;

type KeyHandlers = { onkeydown: (event: KeyboardEvent) => void; onkeyup: (event: KeyboardEvent) => void };

export interface DecisionGuard {
  /** Whether an input may decide: the card settled, nothing in flight, a key freshly pressed. */
  counts(event: Event): boolean;
  /** For `<svelte:window>`: capture phase, before anything else sees the key. */
  onkeydowncapture(event: KeyboardEvent): void;
  onkeyupcapture(event: KeyboardEvent): void;
  /** Spread on a card's button: Enter and Space call `act`, which checks `counts` itself. */
  buttonKey(act: (event: KeyboardEvent) => void): KeyHandlers;
}

/** Made when the card appears (one card per question); `busy` while an answer is in flight. */
export function decisionGuard(busy: () => boolean): DecisionGuard {
  const shownAt = performance.now();
  /** Keys pressed since the card appeared. Read by the handlers only, never drawn. */
  const pressedSince = new Set<string>();
  return {
    counts(event) {
      if (busy() || performance.now() - shownAt < SETTLE_MS) return false;
      if (event instanceof KeyboardEvent) return !event.repeat && pressedSince.has(event.key);
      return true;
    },
    onkeydowncapture(event) {
      if (!event.repeat) pressedSince.add(event.key);
    },
    onkeyupcapture(event) {
      // Let go of a key, it is no longer "down since the card appeared"; Space acts on release.
      queueMicrotask(() => pressedSince.delete(event.key));
    },
    buttonKey(act) {
      return {
        onkeydown: (event) => {
          if (event.key !== 'Enter' && event.key !== ' ') return;
          event.preventDefault();
          if (event.key === 'Enter') act(event);
        },
        onkeyup: (event) => {
          if (event.key !== ' ') return;
          event.preventDefault();
          act(event);
        },
      };
    },
  };
}
