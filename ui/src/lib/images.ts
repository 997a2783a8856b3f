// Screenshots and attachments reach the webview as bytes (`get_image`), never as base64 in
// JSON. Each image becomes one blob URL, shared by every view of it. A long run shows
// hundreds of screenshots, so the blobs are bounded like the shell's own cache: the least
// recently asked for are let go (an <img> already showing one keeps its pixels) and fetched
// again if they are asked for again.
import { getImage } from './ipc';

/** Bytes of blobs held at most, besides the newest image. */
const IMAGE_BUDGET = 64 * 1024 * 1024;

interface Entry {
  url: Promise<string>;
  /** 0 until its bytes have arrived. */
  bytes: number;
}

/** By hash, least recently asked for first. */
const entries = new Map<string, Entry>();

export function imageUrl(sha256: string, mediaType: string, budget = IMAGE_BUDGET): Promise<string> {
  const known = entries.get(sha256);
  if (known) {
    entries.delete(sha256);
    entries.set(sha256, known);
    return known.url;
  }
  const entry: Entry = { url: Promise.resolve(''), bytes: 0 };
  entry.url = getImage(sha256).then((bytes) => {
    const url = URL.createObjectURL(new Blob([bytes], { type: mediaType }));
    if (entries.get(sha256) === entry) {
      entry.bytes = bytes.byteLength;
      letGo(budget);
    }
    return url;
  });
  entry.url.catch(() => entries.get(sha256) === entry && entries.delete(sha256));
  entries.set(sha256, entry);
  return entry.url;
}

/** Frees the least recently asked for blobs until the rest fit in `budget`. */
function letGo(budget: number): void {
  let held = 0;
  for (const entry of entries.values()) held += entry.bytes;
  for (const [sha256, entry] of entries) {
    if (held <= budget || entries.size <= 1) return;
    if (entry.bytes === 0) continue; // still arriving
    held -= entry.bytes;
    release(sha256, entry);
  }
}

function release(sha256: string, entry: Entry): void {
  entries.delete(sha256);
  entry.url.then(URL.revokeObjectURL, () => undefined);
}

/** Frees every blob URL, e.g. when another session is opened. */
export function releaseImages(): void {
  for (const [sha256, entry] of entries) release(sha256, entry);
}
