/**
 * A transcript to replay: one agent session in the API's message format, whatever file format it
 * came from, and the error every parser throws for input it cannot read.
 */
import type { MessageInput } from '@compactor/db';

/** The input formats `compactor replay` reads. */
export const TRANSCRIPT_FORMATS = ['compactor', 'claude-code', 'codex', 'chat-completions'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

export interface Transcript {
  /** Unique within one replay: the file's base name, and the line or session id when it holds several. */
  key: string;
  file: string;
  format: TranscriptFormat;
  messages: MessageInput[];
}

/** Input that does not parse: names the file and, where there is one, the line (1-based). */
export class TranscriptError extends Error {
  override readonly name = 'TranscriptError';
  constructor(
    readonly file: string,
    readonly line: number | null,
    detail: string,
  ) {
    super(`${file}${line === null ? '' : `:${line}`}: ${detail}`);
  }
}

/** A JSON object (not an array, not null), for the shape checks of the parsers. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
