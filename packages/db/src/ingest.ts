import type { MessageInput, PartInput } from '@compactor/contract';
import type { Part } from '@compactor/core';
import { assertNever } from '@compactor/core';
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
 * What a file part costs is up to the provider (OpenAI: 85–1,105 tokens per image tile set,
 * Anthropic: about 1,600 for a full-size image); a flat 1,000 keeps estimates on the safe side
 * without fetching the file.
 */
export const FILE_PART_TOKENS = 1000;

/**
 * Counts a part's tokens once, at write time. A tool part costs its name, its arguments and its
 * result (output or error); `outputTokens` is the output alone, what pruning would save.
 */
export async function countPart(part: PartInput, counter: TokenCounter): Promise<Part> {
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
    case 'file':
      return {
        type: 'file',
        mime: part.mime,
        filename: part.filename ?? null,
        url: part.url,
        tokens: FILE_PART_TOKENS + (part.filename ? await counter.count(part.filename) : 0),
      };
    default:
      return assertNever(part, 'part');
  }
}

/**
 * Turns validated API messages into rows to store: ids assigned where the client sent none,
 * parts counted, and a hash of the content as posted (id excluded) for idempotent re-posts.
 */
export async function prepareMessages(
  inputs: MessageInput[],
  counter: TokenCounter,
  now: Date,
): Promise<NewMessage[]> {
  const prepared: NewMessage[] = [];
  for (const input of inputs) {
    const { id, ...content } = input;
    const parts: Part[] = [];
    for (const part of input.parts) parts.push(await countPart(part, counter));
    prepared.push({
      id: id ?? newId('msg'),
      role: input.role,
      parts,
      finish: input.finish ?? null,
      error: input.error ?? null,
      usage: input.usage ?? null,
      createdAt: input.createdAt ? new Date(input.createdAt) : now,
      metadata: input.metadata ?? {},
      contentHash: contentHash(content),
    });
  }
  return prepared;
}
