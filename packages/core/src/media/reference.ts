/**
 * How a file part points at its stored bytes: `compactor-media:sha256:<hex>;bytes=<n>[;px=<w>x<h>]`
 * in its `url`, in place of the `data:` URL it was posted with. The hash finds the object; the
 * size and pixels are there so that a marker can say what an image was without reading it.
 * Never sent to a model: served contexts turn it back into the data URL (@compactor/db).
 */

/** What a media reference says. */
export interface MediaReference {
  sha256: string;
  bytes: number;
  width: number | null;
  height: number | null;
}

const PREFIX = 'compactor-media:sha256:';
const REFERENCE = /^compactor-media:sha256:([0-9a-f]{64});bytes=(\d{1,12})(?:;px=(\d{1,6})x(\d{1,6}))?$/;

/** The reference a part holds for a stored object. */
export function formatMediaReference(reference: MediaReference): string {
  const px =
    reference.width !== null && reference.height !== null ? `;px=${reference.width}x${reference.height}` : '';
  return `${PREFIX}${reference.sha256};bytes=${reference.bytes}${px}`;
}

/** What a part's `url` refers to, or null when it is not a media reference. */
export function parseMediaReference(url: string): MediaReference | null {
  if (!url.startsWith(PREFIX)) return null;
  const match = REFERENCE.exec(url);
  if (!match) return null;
  return {
    sha256: match[1]!,
    bytes: Number(match[2]),
    width: match[3] === undefined ? null : Number(match[3]),
    height: match[4] === undefined ? null : Number(match[4]),
  };
}

/** Whether a URL is a media reference (whatever it says). */
export function isMediaReference(url: string): boolean {
  return url.toLowerCase().startsWith('compactor-media:');
}
