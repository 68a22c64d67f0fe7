import { describe, expect, it } from 'vitest';
import type { Message } from './model';
import {
  buildSummaryMessages,
  COMPACTION_MARKER_TEXT,
  countLeadingSummaryMessages,
  extractPreviousFileOps,
  extractPreviousSummary,
  previousSummaryMessageCount,
  USER_SUMMARY_PREFIX,
  type NewMessage,
  type SummaryMessageStyle,
} from './summary-messages';
import { message, text, user } from './test-support/builders';

/** Stored form of what buildSummaryMessages returns, as the store would give it back. */
function stored(messages: NewMessage[], firstSeq: number): Message[] {
  return messages.map((m, i) => ({ ...m, seq: firstSeq + i }));
}

const base = {
  summaryText: '## Goal\nShip the parser.',
  compactionId: 'cmp1',
  auto: true,
  messagesCompacted: 12,
  fileOps: { readFiles: ['a.ts', 'b.ts'], modifiedFiles: ['b.ts'] },
  createdAt: '2025-02-03T04:05:06Z',
};

describe('buildSummaryMessages', () => {
  it('opencode: a user request marker with a compaction part, then the assistant summary', () => {
    const [marker, summary, ...rest] = buildSummaryMessages({ ...base, style: 'opencode' });
    expect(rest).toEqual([]);
    expect(marker).toMatchObject({
      id: 'cmp1-request',
      role: 'user',
      summary: true,
      compactionId: 'cmp1',
      parts: [{ type: 'compaction', auto: true }],
      metadata: { type: 'compaction_request', compactionId: 'cmp1' },
      createdAt: base.createdAt,
    });
    // As OpenCode's summary message: written by the hidden compaction agent.
    expect(summary).toMatchObject({
      role: 'assistant',
      summary: true,
      finish: 'stop',
      metadata: { type: 'compaction_summary', compactionId: 'cmp1', mode: 'compaction', agent: 'compaction' },
    });
    // The marker part costs what the model is shown for it: the marker note, by the given counter.
    const counted = buildSummaryMessages({
      ...base,
      style: 'opencode',
      countTokens: (value) => value.length,
    });
    expect(counted[0]?.parts[0]?.tokens).toBe(COMPACTION_MARKER_TEXT.length);
    expect(summary).toMatchObject({
      id: 'cmp1-summary',
      role: 'assistant',
      summary: true,
      finish: 'stop',
      error: null,
      usage: null,
      metadata: {
        type: 'compaction_summary',
        compactionId: 'cmp1',
        messagesCompacted: 12,
        readFiles: ['a.ts'],
        modifiedFiles: ['b.ts'],
      },
    });
    expect(summary?.parts).toEqual([
      {
        type: 'text',
        text: '## Goal\nShip the parser.\n\n<read-files>\na.ts\n</read-files>\n\n<modified-files>\nb.ts\n</modified-files>',
        tokens: expect.any(Number),
      },
    ]);
  });

  it('user (Opal / klaude-code): one user message opening with the compaction sentence', () => {
    const messages = buildSummaryMessages({
      ...base,
      style: 'user',
      fileOps: null,
      ids: { summary: 'custom' },
    });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ id: 'custom', role: 'user', summary: true, finish: null });
    expect(messages[0]?.parts[0]).toMatchObject({
      text: `${USER_SUMMARY_PREFIX}\n\n<summary>\n## Goal\nShip the parser.\n</summary>`,
    });
  });

  it('system (docs/PRESETS.md, `topic`): "[History Summary - N earlier messages]"', () => {
    const messages = buildSummaryMessages({ ...base, style: 'system', fileOps: null, countTokens: () => 7 });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ role: 'system', parts: [{ type: 'text', tokens: 7 }] });
    expect(messages[0]?.parts[0]).toMatchObject({
      text: '[History Summary - 12 earlier messages]\n\n## Goal\nShip the parser.',
    });
  });

  it('rejects an unknown style', () => {
    expect(() => buildSummaryMessages({ ...base, style: 'fancy' as SummaryMessageStyle })).toThrow(
      'unexpected summary message style',
    );
  });
});

describe('reading a previous compaction back (next cycle)', () => {
  const styles: SummaryMessageStyle[] = ['opencode', 'user', 'system'];
  it.each(styles)('%s: extracts the summary body and the file ops from metadata', (style) => {
    const written = stored(buildSummaryMessages({ ...base, style }), 20);
    const range = [...written, message(30, 'user', [text('next question')])];
    expect(countLeadingSummaryMessages(range)).toBe(written.length);
    expect(extractPreviousSummary(range)).toBe('## Goal\nShip the parser.');
    expect(extractPreviousFileOps(range)).toEqual({ readFiles: ['a.ts'], modifiedFiles: ['b.ts'] });
  });

  it('returns null when the range starts with ordinary messages', () => {
    const range = [message(1, 'user', [text('hello')]), message(2, 'assistant', [text('hi')])];
    expect(countLeadingSummaryMessages(range)).toBe(0);
    expect(extractPreviousSummary(range)).toBeNull();
    expect(extractPreviousFileOps(range)).toBeNull();
    expect(extractPreviousSummary([])).toBeNull();
  });

  it('recognises unflagged summaries imported from Opal or klaude-code by their opening', () => {
    const opal = message(
      1,
      'user',
      [text('[Conversation summary — older messages were compacted]\n\n## Goal\nX')],
      {
        metadata: { type: 'compaction_summary', read_files: ['r'], modified_files: [] },
      },
    );
    expect(countLeadingSummaryMessages([opal])).toBe(1);
    expect(extractPreviousSummary([opal])).toBe('## Goal\nX');
    expect(extractPreviousFileOps([opal])).toEqual({ readFiles: ['r'], modifiedFiles: [] });
    const klaude = message(1, 'user', [text(`${USER_SUMMARY_PREFIX}\n\nDid things.`)]);
    expect(extractPreviousSummary([klaude])).toBe('Did things.');
  });

  it('a summary message with no text yields no previous summary', () => {
    const marker = message(1, 'user', [{ type: 'compaction', auto: false, tokens: 1 }], { summary: true });
    expect(countLeadingSummaryMessages([marker])).toBe(1);
    expect(extractPreviousSummary([marker])).toBeNull();
  });
});

describe('previousSummaryMessageCount', () => {
  const written = (style: 'system' | 'user', messagesCompacted: number) =>
    buildSummaryMessages({
      style,
      summaryText: '## Goal\nShip it',
      compactionId: 'c1',
      auto: true,
      messagesCompacted,
      createdAt: '2025-01-01T00:00:00Z',
    }).map((m, i) => ({ ...m, seq: 1 + i }) as Message);

  it.each<[string, Message[], number | null]>([
    ["the summary's metadata", written('user', 12), 12],
    [
      'a system summary without metadata: its heading',
      written('system', 7).map((m) => ({ ...m, metadata: {} })),
      7,
    ],
    ['no summary in front', [user('hello', 10)], null],
  ])('%s → %s', (_name, messages, expected) => {
    expect(previousSummaryMessageCount([...messages, user('next', 5, { seq: 9 })])).toBe(expected);
  });
});
