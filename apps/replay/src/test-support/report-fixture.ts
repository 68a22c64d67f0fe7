/** A small replay report built in code, for the renderers' tests: two variants of one transcript. */
import type { CompactionRecord, ReplayReport, RunReport } from '../report/model';

function compaction(turn: number, changes: Partial<CompactionRecord> = {}): CompactionRecord {
  return {
    id: `cmp_${turn}`,
    reason: 'auto',
    strategy: 'summarize',
    outcome: 'summarized',
    triggeredAtTurn: turn,
    endedAtTurn: turn,
    tokensBefore: 14_000,
    tokensAfter: 6_000,
    prunedParts: 2,
    prunedTokens: 3_000,
    llm: { model: 'stub-summarizer', input: 2_900, output: 320, costUsd: null },
    latencyMs: 180,
    waitedMs: 150,
    error: null,
    context: { messages: 9, tokens: 6_000, usable: 14_000, withinWindow: true, issues: [], valid: true },
    retention: {
      files: [
        { path: 'src/billing/totals.ts', kind: 'modified', named: 'verbatim' },
        { path: 'src/billing/rounding.ts', kind: 'read', named: 'group' },
      ],
      goal: { text: 'Invoice totals are off by one cent <for EUR>', where: 'paraphrased' },
      constraints: [
        { text: 'You must keep the public API unchanged.', where: 'verbatim' },
        { text: 'Never use floating point for money.', where: 'verbatim' },
      ],
      facts: [{ text: 'v2.4.1', where: 'verbatim' }],
      latestRequest: { text: 'Now add a regression test.', where: 'verbatim' },
    },
    ...changes,
  };
}

function run(label: string, compactions: CompactionRecord[], rise: number): RunReport {
  return {
    transcript: 'session.jsonl#7f3c2a91',
    file: 'fixtures/session.jsonl',
    format: 'claude-code',
    messages: 12,
    variant: { label, policyLabel: label, policy: { preset: label }, summarizerModel: null },
    sessionId: `replay-${label}`,
    window: 16_000,
    usable: 14_000,
    status: 'completed',
    error: null,
    durationMs: 1_200,
    waitMs: 300,
    timing: { appendMs: 700, pruneWaitMs: 100, checkMs: 50 },
    points: Array.from({ length: 12 }, (_, i) => ({
      turn: i + 1,
      role: i % 3 === 0 ? 'user' : 'assistant',
      tokens: i < 8 ? 1_000 + i * rise : 6_000 + (i - 8) * 300,
    })),
    compactions,
    prunes: { jobs: 3, parts: 0, tokens: 0 },
  };
}

export function sampleReport(): ReplayReport {
  const lost = compaction(8, {
    retention: {
      ...compaction(8).retention!,
      constraints: [
        { text: 'You must keep the public API unchanged.', where: 'verbatim' },
        { text: 'Never use floating point for money.', where: null },
      ],
      files: [{ path: 'src/billing/totals.ts', kind: 'modified', named: null }],
      facts: [{ text: 'v2.4.1', where: null }],
    },
    recall: {
      facts: [
        { kind: 'goal', text: 'Invoice totals are off by one cent <for EUR>', found: false },
        { kind: 'constraint', text: 'Never use floating point for money.', found: true, via: 'search' },
        { kind: 'file', text: 'src/billing/totals.ts', found: true, via: 'listing' },
      ],
    },
  });
  return {
    version: 1,
    startedAt: '2025-08-14T09:00:00.000Z',
    finishedAt: '2025-08-14T09:00:05.000Z',
    target: { kind: 'embedded', url: 'http://127.0.0.1:1234', llm: 'stub (zero latency)' },
    window: 16_000,
    usage: 'rescale',
    runs: [
      run('opencode', [compaction(8)], 1_700),
      run(
        'opal',
        [
          lost,
          compaction(11, {
            outcome: 'failed',
            context: null,
            retention: null,
            error: { code: 'context_cannot_fit', message: 'too big' },
          }),
        ],
        1_600,
      ),
    ],
  };
}
