import { describe, expect, it } from 'vitest';
import { assembleContext, isPinnedMessage, latestCompletedCompaction, renderToolPart } from './context';
import { INTERRUPTED_TOOL_RESULT_TOKENS } from './tokens';
import {
  INTERRUPTED_TOOL_RESULT,
  type CompactionBoundary,
  type CompactionStatus,
  type Message,
  type ToolPart,
} from './model';
import { message, text, toolPart, type ToolPartOptions } from './test-support/builders';

/** An ordinary message at `seq`: one text `m<seq>` of 10 tokens. */
const plain = (seq: number, role: Message['role']): Message => message(seq, role, [text(`m${seq}`, 10)]);
/** A completed 1000-token read of `a.ts` whose output is `outputTokens` long. */
const tool = (options: ToolPartOptions = {}, outputTokens = 900): ToolPart =>
  toolPart('read', outputTokens, {
    callId: 'c1',
    input: { path: 'a.ts' },
    output: 'file contents',
    tokens: 1000,
    ...options,
  });
function summaryOf(seq: number, compactionId: string): Message {
  return message(seq, 'assistant', [text(`summary ${compactionId}`, 10)], {
    id: `s-${compactionId}`,
    summary: true,
    compactionId,
    finish: 'stop',
  });
}
function compaction(
  id: string,
  status: CompactionStatus,
  boundarySeq: number | null,
  finishedAt: string | null,
  summaryMessageIds: string[] = [`s-${id}`],
): CompactionBoundary {
  return { id, status, boundarySeq, summaryMessageIds, finishedAt };
}
const ids = (messages: Message[]): string[] => messages.map((m) => m.id);

describe('assembleContext', () => {
  // Seqs 1–6 ordinary; c1 summarised 1–3 (summary at 7); 8–9 came after; c2 summary at 10.
  const history = [
    plain(1, 'user'),
    plain(2, 'assistant'),
    plain(3, 'user'),
    plain(4, 'assistant'),
    plain(5, 'user'),
    plain(6, 'assistant'),
    summaryOf(7, 'c1'),
    plain(8, 'user'),
    plain(9, 'assistant'),
    summaryOf(10, 'c2'),
  ];

  it.each<[string, CompactionBoundary[], string[], string | null]>([
    ['no compaction: every non-summary message', [], ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm8', 'm9'], null],
    [
      'a completed compaction: its summary, then seq >= boundary',
      [compaction('c1', 'completed', 4, '2025-01-01T01:00:00Z')],
      ['s-c1', 'm4', 'm5', 'm6', 'm8', 'm9'],
      'c1',
    ],
    [
      'the latest completed by finishedAt wins, whatever the list order; other summaries hidden',
      [
        compaction('c2', 'completed', 8, '2025-01-01T02:00:00Z'),
        compaction('c1', 'completed', 4, '2025-01-01T01:00:00Z'),
      ],
      ['s-c2', 'm8', 'm9'],
      'c2',
    ],
    ...(['pending', 'running', 'failed', 'skipped'] as const).map(
      (status): [string, CompactionBoundary[], string[], string | null] => [
        `a ${status} compaction changes nothing`,
        [
          compaction('c1', 'completed', 4, '2025-01-01T01:00:00Z'),
          compaction('c2', status, 8, status === 'failed' ? '2025-01-01T02:00:00Z' : null),
        ],
        ['s-c1', 'm4', 'm5', 'm6', 'm8', 'm9'],
        'c1',
      ],
    ),
    [
      'only a failed compaction: as if none',
      [compaction('c2', 'failed', 8, '2025-01-01T02:00:00Z')],
      ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm8', 'm9'],
      null,
    ],
    [
      'truncate-only (no summary message)',
      [compaction('c3', 'completed', 5, '2025-01-01T03:00:00Z', [])],
      ['m5', 'm6', 'm8', 'm9'],
      'c3',
    ],
    [
      'boundary null: only what came after the summary',
      [compaction('c1', 'completed', null, '2025-01-01T01:00:00Z')],
      ['s-c1', 'm8', 'm9'],
      'c1',
    ],
    [
      'boundary null and no summary: nothing',
      [compaction('c3', 'completed', null, '2025-01-01T01:00:00Z', [])],
      [],
      'c3',
    ],
    [
      'a summary id that does not exist is skipped',
      [compaction('c1', 'completed', 8, '2025-01-01T01:00:00Z', ['missing', 's-c1'])],
      ['s-c1', 'm8', 'm9'],
      'c1',
    ],
  ])('%s', (_name, compactions, expectedIds, expectedCompaction) => {
    const context = assembleContext([...history].reverse(), compactions);
    expect(ids(context.messages)).toEqual(expectedIds);
    expect(context.compactionId).toBe(expectedCompaction);
  });

  it('shows messages appended while the compaction ran (seq between the boundary and the summary)', () => {
    const context = assembleContext(history, [compaction('c2', 'completed', 9, '2025-01-01T02:00:00Z')]);
    expect(ids(context.messages)).toEqual(['s-c2', 'm9']);
    expect(context.boundarySeq).toBe(9);
  });

  it('keeps summary messages in summaryMessageIds order (OpenCode marker, then summary)', () => {
    const marker = message(11, 'user', [{ type: 'compaction', auto: true, tokens: 20 }], {
      id: 'req',
      summary: true,
      compactionId: 'c4',
    });
    const summary = message(12, 'assistant', [text('summary', 10)], {
      id: 'sum',
      summary: true,
      compactionId: 'c4',
    });
    const context = assembleContext(
      [...history, summary, marker],
      [compaction('c4', 'completed', 8, '2025-01-01T04:00:00Z', ['req', 'sum'])],
    );
    expect(ids(context.messages)).toEqual(['req', 'sum', 'm8', 'm9']);
    expect(context.tokens).toBe(20 + 10 + 10 + 10);
  });

  it('renders pruned outputs and interrupted calls, and counts tokens after rendering', () => {
    const messages = [
      message(1, 'user', [text('read it', 5)]),
      message(2, 'assistant', [
        tool({ callId: 'pruned', compactedAt: '2025-01-01T00:00:00Z' }),
        tool({ callId: 'live' }),
        tool({ callId: 'running', status: 'running', output: null, tokens: 30 }, 0),
      ]),
    ];
    const context = assembleContext(messages, []);
    const parts = context.messages[1]?.parts as ToolPart[];
    expect(parts[0]).toMatchObject({
      // The marker names the call to recall: (43 fixed characters + 6 bytes of "pruned" + 3) / 4 = 13.
      output: '[Old tool result content cleared — recall pruned]',
      outputTokens: 13,
      tokens: 100 + 13,
    });
    expect(parts[1]).toBe(messages[1]?.parts[1]);
    expect(parts[2]).toMatchObject({
      status: 'error',
      error: INTERRUPTED_TOOL_RESULT,
      tokens: 30 + INTERRUPTED_TOOL_RESULT_TOKENS,
    });
    expect(context.tokens).toBe(5 + (100 + 13) + 1000 + (30 + INTERRUPTED_TOOL_RESULT_TOKENS));
    // The stored history is untouched (lazy deletion).
    expect(messages[1]?.parts[0]).toMatchObject({ output: 'file contents' });
  });
});

describe('assembleContext: pinned system messages (REFERENCE: instructions missing after compaction)', () => {
  // seq 1 the system prompt, 2–5 a conversation, 6 a system note the client added later, 7–8
  // more; c1 summarised 1–6 (summary at 9, boundary 7).
  const pinnedHistory = [
    message(1, 'system', [text('You are a careful engineer. Follow AGENTS.md.', 30)]),
    plain(2, 'user'),
    plain(3, 'assistant'),
    plain(4, 'user'),
    plain(5, 'assistant'),
    message(6, 'system', [text('The user switched to plan mode.', 8)]),
    plain(7, 'user'),
    plain(8, 'assistant'),
    summaryOf(9, 'c1'),
  ];

  it.each<[string, CompactionBoundary[], { pinSystemMessages?: boolean }, string[]]>([
    [
      'the system messages the boundary hid come first, in seq order, then the summary',
      [compaction('c1', 'completed', 7, '2025-01-01T01:00:00Z')],
      {},
      ['m1', 'm6', 's-c1', 'm7', 'm8'],
    ],
    [
      'a system message from the boundary on stays where it is',
      [compaction('c1', 'completed', 5, '2025-01-01T01:00:00Z')],
      {},
      ['m1', 's-c1', 'm5', 'm6', 'm7', 'm8'],
    ],
    ['without a compaction nothing moves', [], {}, ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8']],
    [
      'boundary null: pinned before the summary still shown',
      [compaction('c1', 'completed', null, '2025-01-01T01:00:00Z')],
      {},
      ['m1', 'm6', 's-c1'],
    ],
    [
      'truncate-only (no summary): pinned, then the kept messages',
      [compaction('c1', 'completed', 7, '2025-01-01T01:00:00Z', [])],
      {},
      ['m1', 'm6', 'm7', 'm8'],
    ],
    [
      'pinSystemMessages: false hides them like any message',
      [compaction('c1', 'completed', 7, '2025-01-01T01:00:00Z')],
      { pinSystemMessages: false },
      ['s-c1', 'm7', 'm8'],
    ],
  ])('%s', (_name, compactions, options, expected) => {
    const context = assembleContext([...pinnedHistory].reverse(), compactions, options);
    expect(ids(context.messages)).toEqual(expected);
  });

  it("a compaction's system-style summary is not pinned: an older one stays hidden", () => {
    const systemSummary = message(9, 'system', [text('[History Summary - 4 earlier messages]', 10)], {
      id: 's-c1',
      summary: true,
      compactionId: 'c1',
    });
    const history = [...pinnedHistory.slice(0, 8), systemSummary, summaryOf(10, 'c2')];
    const context = assembleContext(history, [
      compaction('c1', 'completed', 7, '2025-01-01T01:00:00Z'),
      compaction('c2', 'completed', 8, '2025-01-01T02:00:00Z'),
    ]);
    expect(ids(context.messages)).toEqual(['m1', 'm6', 's-c2', 'm8']);
    expect(context.tokens).toBe(30 + 8 + 10 + 10);
  });

  it('isPinnedMessage: client system messages only', () => {
    expect(isPinnedMessage(plain(1, 'system'))).toBe(true);
    expect(isPinnedMessage({ ...plain(1, 'system'), summary: true })).toBe(false);
    expect(isPinnedMessage(plain(1, 'user'))).toBe(false);
  });
});

describe('renderToolPart', () => {
  it('is idempotent, so renderers may apply it again', () => {
    for (const part of [
      tool({ compactedAt: '2025-01-01T00:00:00Z' }),
      tool({ status: 'pending', output: null }),
    ]) {
      const once = renderToolPart(part);
      expect(renderToolPart(once)).toEqual(once);
    }
  });
  it('an unfinished call reads as interrupted even if it was (wrongly) pruned', () => {
    expect(renderToolPart(tool({ status: 'pending', output: null, compactedAt: 'x' }))).toMatchObject({
      status: 'error',
      error: INTERRUPTED_TOOL_RESULT,
    });
  });
  it('never counts negative tokens for an inconsistent part', () => {
    // The marker of call c1: (43 + 2 + 3) / 4 = 12 tokens.
    expect(renderToolPart(tool({ compactedAt: 'x', tokens: 10 }, 50)).tokens).toBe(12);
  });
});

describe('latestCompletedCompaction', () => {
  it.each<[string, CompactionBoundary[], string | undefined]>([
    ['none', [], undefined],
    [
      'compares instants, not strings',
      [
        compaction('a', 'completed', 1, '2025-01-01T10:00:00+02:00'),
        compaction('b', 'completed', 1, '2025-01-01T09:00:00Z'),
      ],
      'b',
    ],
    [
      'a tie goes to the later in the list',
      [
        compaction('a', 'completed', 1, '2025-01-01T00:00:00Z'),
        compaction('b', 'completed', 1, '2025-01-01T00:00:00Z'),
      ],
      'b',
    ],
    [
      'a completed row without finishedAt still counts, as the oldest',
      [compaction('a', 'completed', 1, null), compaction('b', 'completed', 1, '2025-01-01T00:00:00Z')],
      'b',
    ],
    [
      'an unparseable time counts as the oldest',
      [compaction('b', 'completed', 1, '2025-01-01T00:00:00Z'), compaction('a', 'completed', 1, 'yesterday')],
      'b',
    ],
    ['only completed ones', [compaction('a', 'running', 1, null)], undefined],
  ])('%s', (_name, compactions, expected) => {
    expect(latestCompletedCompaction(compactions)?.id).toBe(expected);
  });
});
