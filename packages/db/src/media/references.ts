/**
 * How a file part points at its stored bytes: `compactor-media:sha256:<hex>` in the part's `url`,
 * in place of the `data:` URL it was posted with. Never sent to a model: context reads turn it
 * back into the data URL (media/resolve.ts).
 */
import { createHash } from 'node:crypto';
import { parseDataUrl } from '@compactor/contract';
import type { InspectedMedia } from '@compactor/core';

const PREFIX = 'compactor-media:sha256:';
const REFERENCE = /^compactor-media:sha256:([0-9a-f]{64})$/;

/** A media object to store: its bytes and what its header said. */
export interface MediaObjectInput {
  sha256: string;
  mime: string;
  data: Uint8Array;
  width: number | null;
  height: number | null;
  pages: number | null;
}

/** The reference a part holds for the object of `sha256`. */
export function mediaReference(sha256: string): string {
  return PREFIX + sha256;
}

/** The SHA-256 a part's `url` refers to, or null when it is not a media reference. */
export function mediaReferenceSha(url: string): string | null {
  if (!url.startsWith(PREFIX)) return null;
  return REFERENCE.exec(url)?.[1] ?? null;
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
