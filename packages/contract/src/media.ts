/**
 * Media in file parts: what a `data:` URL may carry. A file part by `https:` URL (or any other
 * scheme) is a reference the API keeps as it is; a `data:` URL's bytes are stored out of line,
 * so they are checked here, before anything is written: a type on the allow-list (no SVG: it can
 * carry script), well-formed base64 (percent-encoded only for text), and at most
 * {@link MAX_MEDIA_BYTES} decoded.
 * The image's header (its format and size in pixels) is checked where it is counted (@compactor/db).
 */

/** The most bytes one `data:` URL may decode to (OpenAI's per-image limit). */
export const MAX_MEDIA_BYTES = 20 * 1024 * 1024;

/** Why a client may not post a stored part's reference itself: its count and size would be its word. */
export const MEDIA_REFERENCE_REFUSAL =
  "compactor-media: URLs are Compactor's own references to stored bytes: send the data: URL";

/** Image types the providers accept, as `data:` URLs name them. */
export const MEDIA_IMAGE_MIMES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
/** Documents a `data:` URL may carry. */
export const MEDIA_DOCUMENT_MIMES = [
  'application/pdf',
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
] as const;
/** Audio a `data:` URL may carry (what Chat Completions' `input_audio` takes). */
export const MEDIA_AUDIO_MIMES = ['audio/wav', 'audio/mp3', 'audio/mpeg'] as const;
const ALLOWED = new Set<string>([
  ...MEDIA_IMAGE_MIMES,
  ...MEDIA_DOCUMENT_MIMES,
  ...MEDIA_AUDIO_MIMES,
  'image/jpg',
]);

/** A `data:` URL taken apart: its media type (lower case, parameters dropped) and base64 payload. */
export interface DataUrl {
  mime: string;
  base64: string;
}

const DATA_URL_HEAD = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)((?:;[a-z0-9-]+=[^;,]*)*)(;base64)?,/i;

/** Whether a URL is a `data:` URL (the scheme is case-insensitive). */
export function isDataUrl(url: string): boolean {
  return url.length >= 5 && url.slice(0, 5).toLowerCase() === 'data:';
}

/** The parts of a `data:` URL with a media type, or null for any other URL or an unparsable head. */
export function parseDataUrl(url: string): (DataUrl & { encoded: boolean }) | null {
  const head = DATA_URL_HEAD.exec(url.slice(0, 512));
  if (!head) return null;
  return { mime: normalMime(head[1]!), base64: url.slice(head[0].length), encoded: head[3] !== undefined };
}

/** `image/jpg` is what some clients write for `image/jpeg`. */
function normalMime(mime: string): string {
  const lower = mime.toLowerCase();
  return lower === 'image/jpg' ? 'image/jpeg' : lower;
}

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** The value of each base64 letter by character code (-1: not a letter). */
export const BASE64_VALUE: Int16Array = new Int16Array(128).fill(-1);
for (let i = 0; i < BASE64_ALPHABET.length; i++) BASE64_VALUE[BASE64_ALPHABET.charCodeAt(i)] = i;

/**
 * Whether `text` is well-formed standard base64: only the 64 letters, a length that is a multiple
 * of 4, at most two `=` at the very end. One pass, no allocation; whitespace is refused (the
 * providers take none in a data URL).
 */
export function isWellFormedBase64(text: string): boolean {
  const n = text.length;
  if (n % 4 !== 0) return false;
  let padding = 0;
  if (n > 0 && text.charCodeAt(n - 1) === 61) padding = text.charCodeAt(n - 2) === 61 ? 2 : 1;
  for (let i = 0; i < n - padding; i++) {
    const code = text.charCodeAt(i);
    if (code >= 128 || BASE64_VALUE[code]! < 0) return false;
  }
  return true;
}

/** Bytes a well-formed base64 text decodes to. */
export function base64DecodedLength(text: string): number {
  const n = text.length;
  if (n === 0) return 0;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  return (n / 4) * 3 - padding;
}

const tooLarge = `the data: URL holds more than ${MAX_MEDIA_BYTES} bytes, the most one part may hold`;

/**
 * What is wrong with a `data:` URL, in words for the client, or null when it may be stored. The
 * size is checked before the base64 is scanned, so an oversized URL costs no pass over it.
 */
export function dataUrlProblem(url: string): string | null {
  const parsed = parseDataUrl(url);
  if (!parsed) return 'a data: URL needs a media type: data:<type>;base64,<data>';
  if (parsed.mime === 'image/svg+xml')
    return 'SVG images are not accepted (they can carry script): send PNG, JPEG, GIF or WebP';
  if (!ALLOWED.has(parsed.mime))
    return `media type ${parsed.mime} is not accepted in a data: URL (images: ${MEDIA_IMAGE_MIMES.join(', ')}; documents: ${MEDIA_DOCUMENT_MIMES.join(', ')}; audio: ${MEDIA_AUDIO_MIMES.join(', ')})`;
  if (!parsed.encoded) {
    // Percent-encoded text (an Anthropic plain-text document as the drop-in stores it) stays inline.
    if (parsed.mime.startsWith('text/')) return url.length > MAX_MEDIA_BYTES ? tooLarge : null;
    return 'a data: URL of this type must be base64-encoded (data:<type>;base64,<data>)';
  }
  if (Math.floor(parsed.base64.length / 4) * 3 > MAX_MEDIA_BYTES) return tooLarge;
  if (parsed.base64.length === 0) return 'the data: URL is empty';
  if (!isWellFormedBase64(parsed.base64)) return 'the data: URL is not well-formed base64';
  return null;
}
