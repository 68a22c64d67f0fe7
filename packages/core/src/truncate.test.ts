import { describe, expect, it } from 'vitest';
import type { ToolPart } from './model';
import { buildSummaryMessages } from './summary-messages';
import { message, text, toolPart } from './test-support/builders';
import { buildTruncateSummary } from './truncate';

const tool = (name: string, input: unknown): ToolPart =>
  toolPart(name, 1, { input, output: 'ok', tokens: 5 });

describe('buildTruncateSummary (Opal :truncate)', () => {
  it('counts roles and tool calls and lists file ops, without an LLM', () => {
    const messages = [
      message(1, 'system', [text('You are helpful.')]),
      message(2, 'user', [text('fix parser.py')]),
      message(3, 'assistant', [
        tool('read_file', { path: 'parser.py' }),
        tool('edit_file', { path: 'parser.py' }),
      ]),
      message(4, 'assistant', [tool('Read', { file_path: 'tests/test_parser.py' }), text('Fixed.')]),
      message(5, 'user', [text('thanks')]),
    ];
    expect(buildTruncateSummary(messages)).toBe(
      '[Compacted 5 messages: 2 user, 2 assistant, 1 system; 3 tool calls]\n\n' +
        '<read-files>\ntests/test_parser.py\n</read-files>\n\n<modified-files>\nparser.py\n</modified-files>',
    );
  });

  it.each([
    [[], '[Compacted 0 messages]'],
    [[message(1, 'user', [text('hi')])], '[Compacted 1 message: 1 user]'],
    [
      [message(1, 'assistant', [tool('bash', { command: 'ls' })])],
      '[Compacted 1 message: 1 assistant; 1 tool call]',
    ],
  ])('singular and plural forms', (messages, expected) => {
    expect(buildTruncateSummary(messages)).toBe(expected);
  });

  it('keeps a previous summary above the line and carries its file ops forward', () => {
    const previous = buildSummaryMessages({
      style: 'opencode',
      summaryText: '## Goal\nEarlier work.',
      compactionId: 'c0',
      auto: true,
      messagesCompacted: 40,
      fileOps: { readFiles: ['old.ts'], modifiedFiles: [] },
      createdAt: '2025-01-01T00:00:00Z',
    }).map((m, i) => ({ ...m, seq: 10 + i }));
    const messages = [
      ...previous,
      message(20, 'user', [text('go on')]),
      message(21, 'assistant', [tool('Edit', { file_path: 'old.ts' })]),
    ];
    expect(buildTruncateSummary(messages)).toBe(
      '## Goal\nEarlier work.\n\n[Compacted 2 messages: 1 user, 1 assistant; 1 tool call]\n\n<modified-files>\nold.ts\n</modified-files>',
    );
  });

  it('uses the file ops it is given', () => {
    expect(
      buildTruncateSummary([message(1, 'user', [text('x')])], {
        fileOps: { readFiles: ['given'], modifiedFiles: [] },
      }),
    ).toBe('[Compacted 1 message: 1 user]\n\n<read-files>\ngiven\n</read-files>');
  });

  it('starts from a partial summary paid for before a later chunk failed', () => {
    const remaining = [message(30, 'user', [text('last part')]), message(31, 'assistant', [text('done')])];
    expect(buildTruncateSummary(remaining, { previousSummary: '## Goal\nChunks 1-2 summarised.' })).toBe(
      '## Goal\nChunks 1-2 summarised.\n\n[Compacted 2 messages: 1 user, 1 assistant]',
    );
    // A blank one changes nothing.
    expect(buildTruncateSummary(remaining, { previousSummary: '  ' })).toBe(
      '[Compacted 2 messages: 1 user, 1 assistant]',
    );
  });
});
