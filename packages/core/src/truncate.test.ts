import { describe, expect, it } from 'vitest';
import type { ToolPart } from './model';
import { extractFileOps } from './file-ops';
import { buildSummaryMessages } from './summary-messages';
import { assistant, conversation, message, text, toolCall, toolPart, user } from './test-support/builders';
import { buildTruncateSummary, checkTruncateSummary } from './truncate';

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
        "<pinned>\nThe user's own words, kept verbatim across compactions:\n" +
        '- Goal: fix parser.py\n- Latest request: thanks\n</pinned>\n\n' +
        '<read-files>\ntests/test_parser.py\n</read-files>\n\n<modified-files>\nparser.py\n</modified-files>',
    );
  });

  it.each([
    [[], '[Compacted 0 messages]'],
    [
      [message(1, 'user', [text('hi')])],
      "[Compacted 1 message: 1 user]\n\n<pinned>\nThe user's own words, kept verbatim across compactions:\n- Goal and latest request: hi\n</pinned>",
    ],
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
    // A summary written before pinned sections existed carries no goal: none is guessed.
    expect(buildTruncateSummary(messages)).toBe(
      '## Goal\nEarlier work.\n\n[Compacted 2 messages: 1 user, 1 assistant; 1 tool call]\n\n' +
        "<pinned>\nThe user's own words, kept verbatim across compactions:\n- Latest request: go on\n</pinned>\n\n" +
        '<modified-files>\nold.ts\n</modified-files>',
    );
  });

  it('carries the previous pinned section forward once, with the new constraints', () => {
    const range = conversation([
      user('Migrate the orders table to UUID keys. Never run the migration against production.'),
      assistant([toolCall('read', { filePath: 'db/migrations/0042_uuid.sql' }, 'ALTER TABLE orders …')]),
      user('Run it on staging first.'),
      assistant('Ran on staging.'),
    ]);
    const previous = buildSummaryMessages({
      style: 'user',
      summaryText: buildTruncateSummary(range),
      compactionId: 'c1',
      auto: true,
      messagesCompacted: 4,
      fileOps: extractFileOps(range),
      createdAt: '2025-05-01T10:00:00Z',
    }).map((m) => ({ ...m, seq: 5 }));
    const next = [
      ...previous,
      ...conversation([user("Don't drop the old id column yet."), assistant('Kept it.')], 6),
    ];
    const checked = checkTruncateSummary(next, { factsOptions: { instructions: 'keep the rollout plan' } });
    expect(checked.text.match(/<pinned>/g)).toHaveLength(1);
    expect(checked.text.split('Never run the migration against production.')).toHaveLength(2);
    expect(checked.text).toContain(
      '- Goal: Migrate the orders table to UUID keys. Never run the migration against production.\n' +
        "- Constraint: Don't drop the old id column yet.\n- Instructions: keep the rollout plan\n" +
        // The latest request is pinned as such too, so the next compaction carries it.
        "- Latest request: Don't drop the old id column yet.\n",
    );
    expect(checked.text).toContain('<read-files>\ndb/migrations/0042_uuid.sql\n</read-files>');
    expect(checked.repair.pinned).toEqual({ goal: 1, constraints: 1, instructions: 1, latestRequest: 1 });
  });

  it('uses the file ops it is given', () => {
    expect(
      buildTruncateSummary([message(1, 'user', [text('x')])], {
        fileOps: { readFiles: ['given'], modifiedFiles: [] },
      }),
    ).toBe(
      "[Compacted 1 message: 1 user]\n\n<pinned>\nThe user's own words, kept verbatim across compactions:\n" +
        '- Goal and latest request: x\n</pinned>\n\n<read-files>\ngiven\n</read-files>',
    );
  });

  it('starts from a partial summary paid for before a later chunk failed', () => {
    const remaining = [message(30, 'user', [text('last part')]), message(31, 'assistant', [text('done')])];
    // The request in `remaining` is not the session's goal: the summary before it stands for that.
    expect(buildTruncateSummary(remaining, { previousSummary: '## Goal\nChunks 1-2 summarised.' })).toBe(
      '## Goal\nChunks 1-2 summarised.\n\n[Compacted 2 messages: 1 user, 1 assistant]\n\n' +
        "<pinned>\nThe user's own words, kept verbatim across compactions:\n- Latest request: last part\n</pinned>",
    );
    // A blank one changes nothing.
    expect(buildTruncateSummary(remaining, { previousSummary: '  ' })).toBe(
      '[Compacted 2 messages: 1 user, 1 assistant]\n\n' +
        "<pinned>\nThe user's own words, kept verbatim across compactions:\n- Goal and latest request: last part\n</pinned>",
    );
  });
});
