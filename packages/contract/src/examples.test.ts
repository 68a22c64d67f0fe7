/**
 * Every example the contract documents (`.meta({ examples })`, and `x-examples` where zod would
 * drop them) passes its own zod schema, refinements included: the OpenAPI test checks them
 * against the JSON Schema, which cannot express the refinements.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as contract from './index.js';

const schemas = Object.entries(contract as Record<string, unknown>).filter(
  (entry): entry is [string, z.ZodType] => entry[1] instanceof z.ZodType,
);

function examplesOf(schema: z.ZodType): unknown[] {
  const meta = z.globalRegistry.get(schema) as
    { examples?: unknown[]; 'x-examples'?: Record<string, { value: unknown }> } | undefined;
  return [...(meta?.examples ?? []), ...Object.values(meta?.['x-examples'] ?? {}).map((e) => e.value)];
}

describe('the contract examples', () => {
  const documented = schemas.filter(([, schema]) => examplesOf(schema).length > 0);

  it('cover every request body and response schema', () => {
    const names = documented.map(([name]) => name);
    for (const name of [
      'CreateSessionBody',
      'PatchSessionBody',
      'SessionOut',
      'AppendMessagesBody',
      'AppendResponse',
      'PatchMessageBody',
      'PatchResponse',
      'HistoryPage',
      'ContextOut',
      'CreateCompactionBody',
      'CompactionOut',
      'CompactionDetailOut',
      'CompactionPage',
      'PruneOut',
      'OverflowBody',
      'OverflowOut',
      'SessionEventPayload',
      'EventStreamText',
      'ErrorBody',
    ]) {
      expect(names).toContain(name);
    }
  });

  it.each(documented)('%s: every example parses', (_name, schema) => {
    for (const example of examplesOf(schema)) {
      const parsed = schema.safeParse(example);
      expect(parsed.success, parsed.error?.message).toBe(true);
    }
  });
});

describe('utf8ByteLength', () => {
  it.each(['', 'ascii', 'é', '€', '😀', 'a\uD800b', '\uDC00', 'mixed é € 😀'])(
    'counts %j like Buffer',
    (text) => {
      expect(contract.utf8ByteLength(text)).toBe(Buffer.byteLength(text, 'utf8'));
    },
  );
});
