/**
 * The objects a file part's `data:` URL becomes, and the reference the part keeps instead
 * (core media/reference.ts); context reads turn it back into the data URL (media/resolve.ts).
 */
import { createHash } from 'node:crypto';
import { parseDataUrl } from '@compactor/contract';
import { formatMediaReference, parseMediaReference, type InspectedMedia } from '@compactor/core';

/** A media object to store: its bytes and what its header said. */
export interface MediaObjectInput {
  sha256: string;
  mime: string;
  data: Uint8Array;
  width: number | null;
  height: number | null;
  pages: number | null;
}

/** The reference a part holds for a stored object (core `formatMediaReference`). */
export function mediaReference(object: MediaObjectInput): string {
  return formatMediaReference({
    sha256: object.sha256,
    bytes: object.data.byteLength,
    width: object.width,
    height: object.height,
  });
}

/** The SHA-256 a part's `url` refers to, or null when it is not a media reference. */
export function mediaReferenceSha(url: string): string | null {
  return parseMediaReference(url)?.sha256 ?? null;
}

/** A `data:` URL of `mime` and `data`. */
export function toDataUrl(mime: string, data: Uint8Array): string {
  return `data:${mime};base64,${Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64')}`;
}

/**
 * The object a checked `data:` URL stores (`inspected` is its `inspectMedia`): the bytes decoded
 * once, here, to be hashed and stored.
 */
export function mediaObjectOf(
  url: string,
  inspected: Extract<InspectedMedia, { kind: 'image' | 'document' }>,
): MediaObjectInput {
  const data = Buffer.from(parseDataUrl(url)!.base64, 'base64');
  return {
    sha256: createHash('sha256').update(data).digest('hex'),
    mime: inspected.mime,
    data,
    width: inspected.kind === 'image' ? inspected.width : null,
    height: inspected.kind === 'image' ? inspected.height : null,
    pages: inspected.kind === 'document' ? inspected.pages : null,
  };
}
