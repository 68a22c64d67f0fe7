/**
 * What an Anthropic message needs beyond the stored parts to be sent again exactly: thinking
 * signatures, redacted thinking, and blocks the stored model has no part for (server tool use
 * and its results, search results), kept verbatim in the message's `metadata.anthropic`.
 */
import type { Json } from './read-input';
import { isRecord } from './read-input';

/** The text of the reasoning part that stands for a `redacted_thinking` block (its data is opaque). */
export const REDACTED_THINKING_TEXT = '[redacted thinking]';

export interface AnthropicMetadata {
  /** Thinking blocks by their text: a reasoning part with this text is sent back with this signature. */
  thinking: { thinking: string; signature: string }[];
  /** `redacted_thinking` data, in order: one per {@link REDACTED_THINKING_TEXT} reasoning part. */
  redacted: string[];
  /** Blocks without a part, with how many of the message's parts came before each. */
  kept: { after: number; block: Json }[];
}

export function emptyAnthropicMetadata(): AnthropicMetadata {
  return { thinking: [], redacted: [], kept: [] };
}

/** The message metadata holding `meta`, or nothing when there is nothing to keep. */
export function anthropicMetadata(meta: AnthropicMetadata): { metadata?: { anthropic: AnthropicMetadata } } {
  const empty = meta.thinking.length === 0 && meta.redacted.length === 0 && meta.kept.length === 0;
  return empty ? {} : { metadata: { anthropic: meta } };
}

/**
 * The Anthropic metadata of a stored message. Metadata is the client's to write through the
 * API too, so anything of the wrong shape is ignored rather than sent upstream.
 */
export function readAnthropicMetadata(metadata: Record<string, unknown>): AnthropicMetadata {
  const meta = metadata['anthropic'];
  const out = emptyAnthropicMetadata();
  if (!isRecord(meta)) return out;
  for (const entry of arrayOf(meta['thinking'])) {
    if (isRecord(entry) && typeof entry['thinking'] === 'string' && typeof entry['signature'] === 'string') {
      if (entry['signature'] !== '')
        out.thinking.push({ thinking: entry['thinking'], signature: entry['signature'] });
    }
  }
  for (const data of arrayOf(meta['redacted'])) if (typeof data === 'string') out.redacted.push(data);
  for (const entry of arrayOf(meta['kept'])) {
    if (isRecord(entry) && typeof entry['after'] === 'number' && isRecord(entry['block'])) {
      if (typeof entry['block']['type'] === 'string')
        out.kept.push({ after: entry['after'], block: entry['block'] });
    }
  }
  return out;
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
