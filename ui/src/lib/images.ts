// Screenshots and attachments reach the webview as bytes (`get_image`), never as base64 in
// JSON. Each image becomes one blob URL, shared by every view of it.
import { getImage } from './ipc';

const urls = new Map<string, Promise<string>>();

export function imageUrl(sha256: string, mediaType: string): Promise<string> {
  let url = urls.get(sha256);
  if (!url) {
    url = getImage(sha256).then((bytes) => URL.createObjectURL(new Blob([bytes], { type: mediaType })));
    url.catch(() => urls.delete(sha256));
    urls.set(sha256, url);
  }
  return url;
}

/** Frees every blob URL, e.g. when another session is opened. */
export function releaseImages(): void {
  for (const url of urls.values()) {
    url.then(URL.revokeObjectURL, () => undefined);
  }
  urls.clear();
}
