import { describe, expect, it } from 'vitest';
import { RECALL_TOOL } from '@compactor/contract';
import { recallAnswerText, recallQueryOf } from './recall-tool.js';

describe('the recall tool asks for a ledger section', () => {
  it('is offered with kind, and turns a kind call into a ledger request', () => {
    expect(RECALL_TOOL.function.description).toContain('kind');
    expect(RECALL_TOOL.function.parameters).toMatchObject({
      properties: { kind: { enum: ['files', 'commands', 'facts'] } },
    });
    expect(recallQueryOf('{"kind":"files"}')).toEqual({ kind: 'files' });
    expect(recallQueryOf('{"kind":"files","query":"x"}')).toBeNull();
    expect(recallQueryOf('{"kind":"secrets"}')).toBeNull();
    expect(recallQueryOf('{"kind":"facts","limit":3}')).toBeNull();
  });

  it('writes a ledger answer as one line per entry, with open errors and unlisted constraints', () => {
    const text = recallAnswerText({
      kind: 'ledger',
      section: 'commands',
      entries: [{ command: 'npm test', outcome: 'failed', exitCode: 1, firstSeq: 3, lastSeq: 9, count: 2 }],
      total: 2,
      nextCursor: 'o1',
      openErrors: [{ command: 'npm test', seq: 9, exitCode: 1 }],
      throughSeq: 12,
    });
    expect(text.split('\n')).toEqual([
      '2 commands in what this session touched, newest first (1 shown):',
      '- npm test (failed, exit code 1)',
      'Open errors (failed, not passed since):',
      '- npm test',
    ]);
    const facts = recallAnswerText({
      kind: 'ledger',
      section: 'facts',
      entries: [],
      total: 0,
      nextCursor: null,
      unlistedConstraints: ['Only use the stdlib.'],
      throughSeq: 12,
    });
    expect(facts).toContain('- Only use the stdlib.');
  });
});
