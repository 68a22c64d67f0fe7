import type { MessageInput, PartInput } from '@compactor/contract';
import type { FilePart, MediaFamily, Part } from '@compactor/core';
import { assertNever, inspectMedia, MediaRejected, parseMediaReference } from '@compactor/core';
import { mediaObjectOf, mediaReference, type MediaObjectInput } from './media/references';
import { canonicalJson, contentHash } from './hashing';
import { newId } from './ids';
import type { NewMessage } from './operations/new-message';

/*
 * What a client posts, as the API hands it on once validated: the types inferred from the wire
 * contract's schemas, not a copy of them. db may depend on @compactor/contract because the contract
 * is a leaf (zod only, no HTTP or server code): what it admits is exactly what db must store, so a
 * field added to the API's message schema reaches the ingest code's types without a second edit.
 */
export type { MessageInput, PartInput } from '@compactor/contract';

/** Exact token counting, cooperative with the event loop (see @compactor/tokenizer). */
export interface TokenCounter {
  count(text: string): Promise<number>;
}

/**
 * Where the bytes of `data:` URLs go while a batch is prepared: each becomes a media object to
 * store, its part a reference to it. `family` counts images as the session's model does.
 */
export interface MediaIngest {
  family: MediaFamily;
  objects: MediaObjectInput[];
}

/**
 * Counts a part's tokens once, at write time. A tool part costs its name, its arguments and its
 * result (output or error); `outputTokens` is the output alone, what pruning would save.
 */
export async function countPart(part: PartInput, counter: TokenCounter, media?: MediaIngest): Promise<Part> {
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return { type: part.type, text: part.text, tokens: await counter.count(part.text) };
    case 'tool': {
      const input = part.input ?? {};
      const output = part.output ?? null;
      const error = part.error ?? null;
      const outputTokens = output === null ? 0 : await counter.count(output);
      const callTokens = (await counter.count(part.tool)) + (await counter.count(canonicalJson(input)));
      const errorTokens = error === null ? 0 : await counter.count(error);
      return {
        type: 'tool',
        callId: part.callId,
        tool: part.tool,
        status: part.status,
        input,
        output,
        error,
        compactedAt: null,
        tokens: callTokens + outputTokens + errorTokens,
        outputTokens,
      };
    }
    case 'file': {
      const counted = await countFilePart(part, counter, media);
      return part.callId === undefined ? counted : { ...counted, callId: part.callId };
    }
    default:
      return assertNever(part, 'part');
  }
}

/** A file part's tokens, its `data:` URL's bytes taken out into `media` as a reference. */
async function countFilePart(
  part: Extract<PartInput, { type: 'file' }>,
  counter: TokenCounter,
  media: MediaIngest | undefined,
): Promise<FilePart> {
  const filename = part.filename ?? null;
  const nameTokens = filename ? await counter.count(filename) : 0;
  // Throws MediaRejected (a 400, nothing written) for a data: URL that is not what it claims.
  const inspected = inspectMedia(part, media?.family ?? 'any');
  if (inspected.kind === 'reference')
    // A URL never fetched: the family's largest image, or a document of unknown pages (core unmeasuredMediaTokens).
    return { type: 'file', mime: part.mime, filename, url: part.url, tokens: inspected.tokens + nameTokens };
  if (inspected.kind === 'inline')
    return { type: 'file', mime: part.mime, filename, url: part.url, tokens: inspected.tokens + nameTokens };
  const tokens = inspected.tokens + nameTokens;
  if (!media) return { type: 'file', mime: inspected.mime, filename, url: part.url, tokens };
  const object = mediaObjectOf(part.url, inspected);
  media.objects.push(object);
  return { type: 'file', mime: inspected.mime, filename, url: mediaReference(object), tokens };
}

/**
 * Turns validated API messages into rows to store: ids assigned where the client sent none,
 * parts counted, and a hash of the content as posted (id excluded) for idempotent re-posts. The
 * bytes of `data:` URLs are taken out into each message's `media` (stored before the message,
 * append-messages.ts), their parts counted as `mediaFamily` counts images.
 */
export async function prepareMessages(
  inputs: MessageInput[],
  counter: TokenCounter,
  now: Date,
  { mediaFamily = 'any' }: { mediaFamily?: MediaFamily } = {},
): Promise<NewMessage[]> {
  const prepared: NewMessage[] = [];
  for (const input of inputs) {
    const { id, ...content } = input;
    const parts: Part[] = [];
    const media: MediaIngest = { family: mediaFamily, objects: [] };
    for (const [index, part] of input.parts.entries()) {
      try {
        parts.push(await countPart(part, counter, media));
      } catch (error) {
        if (!(error instanceof MediaRejected)) throw error;
        throw new MediaRejected(error.message, ['messages', prepared.length, 'parts', index, 'url']);
      }
    }
    prepared.push({
      id: id ?? newId('msg'),
      role: input.role,
      parts,
      finish: input.finish ?? null,
      error: input.error ?? null,
      usage: input.usage ?? null,
      createdAt: input.createdAt ? new Date(input.createdAt) : now,
      metadata: input.metadata ?? {},
      contentHash: contentHash(media.objects.length > 0 ? withDigests(content, parts) : content),
      ...(media.objects.length > 0 ? { media: media.objects } : {}),
    });
  }
  return prepared;
}

/**
 * A message's content with each stored `data:` URL replaced by the SHA-256 of its bytes: what its
 * content hash covers. The same content re-posted hashes the same, and hashing a digest in place
 * of megabytes of base64 is most of an image's ingest time saved.
 */
function withDigests(content: Omit<MessageInput, 'id'>, parts: Part[]): Omit<MessageInput, 'id'> {
  return {
    ...content,
    parts: content.parts.map((part, index) => {
      const counted = parts[index];
      if (part.type !== 'file' || counted?.type !== 'file') return part;
      const reference = parseMediaReference(counted.url);
      return reference ? { ...part, url: `sha256:${reference.sha256}` } : part;
    }),
  };
}
