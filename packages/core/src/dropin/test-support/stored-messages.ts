/**
 * Appends as the store would hand them back in a served context (seq, token counts and defaults
 * filled in), so tests can render what a drop-in request wrote without a database.
 */
import type { Message, Part } from '../../model';
import type { AppendMessageInput } from '../elements';

export function storedMessages(appends: readonly AppendMessageInput[]): Message[] {
  return appends.map((append, index) => ({
    id: append.id ?? `m${index}`,
    seq: index + 1,
    role: append.role,
    parts: append.parts.map((part): Part => {
      switch (part.type) {
        case 'tool':
          return {
            ...part,
            input: part.input ?? {},
            output: part.output ?? null,
            error: part.error ?? null,
            compactedAt: null,
            tokens: 1,
            outputTokens: 1,
          };
        case 'file':
          return { ...part, filename: part.filename ?? null, tokens: 1 };
        default:
          return { ...part, tokens: 1 };
      }
    }),
    finish: append.finish ?? null,
    error: null,
    usage: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    metadata: append.metadata ?? {},
    summary: false,
    compactionId: null,
  }));
}
