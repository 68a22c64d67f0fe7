/**
 * Served media: the file parts of messages about to be served hold references to their bytes;
 * these become the `data:` URLs again, which every rendering turns into its own block (OpenAI
 * `image_url`, Anthropic `image` / `document`, the native part as posted). Only the messages
 * served are resolved, and each object is read once however often it recurs.
 */
import type { FilePart, Message, Part } from '@compactor/core';
import type { DbOrTx } from '../client';
import { mediaReferenceSha, toDataUrl } from './references';
import { loadMediaObjects } from './store';

/** What a model is shown for a part whose bytes are no longer stored. */
export function missingMediaText(part: FilePart): string {
  const what = part.mime.startsWith('image/') ? 'image' : 'file';
  const name = part.filename ? ` ${part.filename}` : '';
  return `[Attached ${what}${name} is no longer stored (${part.mime})]`;
}

/** Whether any part of `messages` refers to a stored media object. */
export function holdsMediaReferences(messages: readonly Message[]): boolean {
  return messages.some((m) => m.parts.some((p) => p.type === 'file' && mediaReferenceSha(p.url) !== null));
}

/**
 * `messages` with every media reference turned back into its `data:` URL (the messages that hold
 * none are returned as they are, not copied). A reference the tenant holds no object for becomes
 * a text note of the same token count, never a URL a provider would refuse.
 */
export async function resolveMediaReferences(
  db: DbOrTx,
  tenantId: string,
  messages: Message[],
): Promise<Message[]> {
  if (!holdsMediaReferences(messages)) return messages;
  const hashes: string[] = [];
  for (const m of messages)
    for (const p of m.parts) {
      const sha = p.type === 'file' ? mediaReferenceSha(p.url) : null;
      if (sha) hashes.push(sha);
    }
  const objects = await loadMediaObjects(db, tenantId, hashes);
  const dataUrls = new Map<string, string>();
  const resolve = (part: Part): Part => {
    if (part.type !== 'file') return part;
    const sha = mediaReferenceSha(part.url);
    if (!sha) return part;
    const object = objects.get(sha);
    if (!object) return { type: 'text', text: missingMediaText(part), tokens: part.tokens };
    let url = dataUrls.get(sha);
    if (url === undefined) {
      url = toDataUrl(object.mime, object.data);
      dataUrls.set(sha, url);
    }
    return { ...part, url };
  };
  return messages.map((m) =>
    m.parts.some((p) => p.type === 'file' && mediaReferenceSha(p.url))
      ? { ...m, parts: m.parts.map(resolve) }
      : m,
  );
}
