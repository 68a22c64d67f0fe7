import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MessageOut, TOOL_STATUS } from '@compactor/contract';
import { INTERRUPTED_TOOL_RESULT, prunedOutputMarker } from '@compactor/core';
import { fieldRows, messagesSection } from './api-docs-messages';
import { typeOf } from './generate-api-docs';

const page = messagesSection(typeOf).join('\n');
/** The rows of the table under `### title`. */
const tableUnder = (title: string) =>
  page
    .split(`### ${title}`)[1]!
    .split('\n###')[0]!
    .split('\n')
    .filter((line) => line.startsWith('| `'));

describe('the Messages and parts section of docs/API.md', () => {
  const partTypes = (MessageOut.shape.parts.element as unknown as { options: z.ZodObject[] }).options.map(
    (option) => (option.shape['type'] as z.ZodLiteral).value as string,
  );

  it('documents every field of every stored part type and how each part reads in the openai format', () => {
    expect(partTypes).toEqual(['text', 'reasoning', 'tool', 'file', 'compaction']);
    const fields = tableUnder('Part types');
    for (const option of (MessageOut.shape.parts.element as unknown as { options: z.ZodObject[] }).options) {
      const type = (option.shape['type'] as z.ZodLiteral).value as string;
      for (const field of Object.keys(option.shape)) {
        expect(
          fields.some((row) => row.startsWith(`| \`${type}\` | \`${field}\` |`)),
          `${type}.${field}`,
        ).toBe(true);
      }
    }
    const rendering = tableUnder('How parts read in the context');
    for (const type of partTypes)
      expect(rendering.some((row) => row.startsWith(`| \`${type}\` |`))).toBe(true);
  });

  it('names the texts core renders for each tool status', () => {
    const rows = tableUnder('Tool statuses');
    expect(rows.map((row) => row.split(' | ')[0])).toEqual(TOOL_STATUS.map((status) => `| \`${status}\``));
    for (const status of ['pending', 'running']) {
      expect(rows.find((row) => row.startsWith(`| \`${status}\``))).toContain(INTERRUPTED_TOOL_RESULT);
    }
    expect(rows.find((row) => row.startsWith('| `completed`'))).toContain(prunedOutputMarker('<callId>'));
  });

  it('refuses a field it has no words for', () => {
    expect(() => fieldRows('text', { text: z.string(), colour: z.string() }, {}, typeOf)).toThrow(
      /text\.colour/,
    );
  });
});
