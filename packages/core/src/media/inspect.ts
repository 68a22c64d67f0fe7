/**
 * What a file part holds, checked and measured before it is stored: a `data:` URL's image must
 * have a header of the format it claims (or of any accepted format, whose type then wins: the
 * providers refuse an image labelled with another type) and a size in pixels the providers take.
 * Only the header is read; the bytes are not decoded.
 */
import {
  dataUrlProblem,
  isDataUrl,
  parseDataUrl,
  MEDIA_IMAGE_MIMES,
  MEDIA_REFERENCE_REFUSAL,
} from '@compactor/contract';
import { isMediaReference } from './reference';
import { base64Source, type ByteSource } from './bytes';
import { IMAGE_FORMAT_MIME, readImageHeader, type ImageHeader } from './dimensions';
import {
  documentTokens,
  imageTokens,
  unmeasuredMediaTokens,
  type ImageDetail,
  type MediaFamily,
} from './media-tokens';

/** The largest side an image may declare (Anthropic refuses past 8000 px; OpenAI scales down). */
export const MAX_IMAGE_SIDE = 16_384;
/** The most pixels an image may declare: what a decoder would allocate for it is bounded too. */
export const MAX_IMAGE_PIXELS = 100_000_000;

/** Media refused at ingest: the client gets a 400 with this message, and nothing is written. */
export class MediaRejected extends Error {
  constructor(
    message: string,
    /** Where in the request body, once known (`messages`, index, `parts`, index, `url`). */
    readonly path: Array<string | number> = [],
  ) {
    super(message);
    this.name = 'MediaRejected';
  }
}

/** A file part as measured: what it holds and what it costs the model. */
export type InspectedMedia =
  /**
   * A URL that is not `data:`: kept as the client sent it; its size is not known here, so it
   * counts as the largest image of the family, or a document of unknown pages (`unmeasuredMediaTokens`).
   */
  | { kind: 'reference'; tokens: number }
  /** Percent-encoded text in a `data:` URL: small, kept inline, counted by its length. */
  | { kind: 'inline'; tokens: number }
  | { kind: 'image'; mime: string; bytes: number; width: number; height: number; tokens: number }
  | { kind: 'document'; mime: string; bytes: number; pages: number | null; tokens: number };

/** An image header's problem, or null when the providers take its size. */
function sizeProblem(header: ImageHeader): string | null {
  const { width, height } = header;
  if (width < 1 || height < 1) return 'the image header declares an empty image';
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE || width * height > MAX_IMAGE_PIXELS)
    return `the image header declares ${width}×${height} px: at most ${MAX_IMAGE_SIDE} px a side and ${MAX_IMAGE_PIXELS} px in all are accepted`;
  return null;
}

/** A page-tree node's `/Count n` (the pages under it), wherever in its dictionary it stands. */
const PAGE_TREE_COUNT =
  /\/Type\s*\/Pages(?![a-zA-Z])[^>]*?\/Count\s+(\d{1,6})|\/Count\s+(\d{1,6})[^<>]*?\/Type\s*\/Pages(?![a-zA-Z])/g;
/** A linearized PDF's first object states its pages: `/Linearized 1 … /N n`. */
const LINEARIZED_PAGES = /\/Linearized\s[^>]*?\/N\s+(\d{1,6})/;

/**
 * Pages of a PDF, read from at most the first 4 MiB: the most of its page objects, its page
 * tree's `/Count` (the root's is the total) and a linearized file's `/N`; `null` when none is
 * found there (the page tree in a compressed object stream), and the document counts as
 * unknown (`documentTokens`).
 */
export function pdfPageCount(source: ByteSource): number | null {
  const window = source.read(0, 4 * 1024 * 1024);
  let text = '';
  for (let i = 0; i < window.length; i += 8192)
    text += String.fromCharCode(...window.subarray(i, Math.min(window.length, i + 8192)));
  let pages = text.match(/\/Type\s*\/Page(?![a-zA-Z])/g)?.length ?? 0;
  for (const match of text.matchAll(PAGE_TREE_COUNT)) pages = Math.max(pages, Number(match[1] ?? match[2]));
  const linearized = LINEARIZED_PAGES.exec(text);
  if (linearized) pages = Math.max(pages, Number(linearized[1]));
  return pages > 0 ? pages : null;
}

/**
 * Checks and measures a file part for a session of `family`. A `data:` URL is parsed (the
 * contract has checked its syntax, type and size already; checked again here, for callers that
 * did not validate), an image's header read and its size checked; throws {@link MediaRejected}.
 */
export function inspectMedia(
  part: { mime: string; url: string },
  family: MediaFamily,
  detail: ImageDetail = 'auto',
): InspectedMedia {
  if (isMediaReference(part.url)) throw new MediaRejected(MEDIA_REFERENCE_REFUSAL);
  if (!isDataUrl(part.url)) return { kind: 'reference', tokens: unmeasuredMediaTokens(part.mime, family) };
  const problem = dataUrlProblem(part.url);
  if (problem) throw new MediaRejected(problem);
  const parsed = parseDataUrl(part.url)!;
  if (!parsed.encoded) return { kind: 'inline', tokens: Math.ceil(part.url.length / 4) };
  const source = base64Source(parsed.base64);
  if ((MEDIA_IMAGE_MIMES as readonly string[]).includes(parsed.mime)) {
    const header = readImageHeader(source);
    if (!header) throw new MediaRejected(`the data: URL is not a readable ${parsed.mime} image`);
    const refused = sizeProblem(header);
    if (refused) throw new MediaRejected(refused);
    return {
      kind: 'image',
      mime: IMAGE_FORMAT_MIME[header.format],
      bytes: source.length,
      width: header.width,
      height: header.height,
      tokens: imageTokens(header.width, header.height, family, detail),
    };
  }
  if (parsed.mime === 'application/pdf') {
    const pages = pdfPageCount(source);
    return {
      kind: 'document',
      mime: parsed.mime,
      bytes: source.length,
      pages,
      tokens: documentTokens(pages),
    };
  }
  // Audio: neither family's formula applies; one page's worth, as before.
  if (parsed.mime.startsWith('audio/'))
    return {
      kind: 'document',
      mime: parsed.mime,
      bytes: source.length,
      pages: null,
      tokens: documentTokens(1),
    };
  // A text document: about four bytes a token, as the text estimate counts (tokens.ts).
  return {
    kind: 'document',
    mime: parsed.mime,
    bytes: source.length,
    pages: null,
    tokens: Math.ceil(source.length / 4),
  };
}
