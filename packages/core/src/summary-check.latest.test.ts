import { describe, expect, it } from 'vitest';
import type { Message } from './model';
import { parsePinnedSections } from './pinned-section';
import {
  collectSummaryFacts,
  fitLatestRequest,
  latestRequestMaxChars,
  PINNED_ITEM_MAX_CHARS,
  verifySummary,
} from './summary-check';
import { buildSummaryMessages } from './summary-messages';
import { assistant, conversation, toolCall, user } from './test-support/builders';

/** A pasted spec the size of the one in the shared sessions (4,547 characters). */
const SPEC = `## Why\nThe TUI is built on Bubble Tea v1.\n\n## What\n${'- Port one view to the v2 API and keep its key bindings.\n'.repeat(80)}## Done when\nEvery view runs on v2.`;
/** The summary budget at a 32k window (a fifth of 28,000 usable tokens). */
const BUDGET_32K = 5_600;
const DROP_EVERYTHING =
  '## Goal\nContinue the current task.\n\n## Next Steps\n1. Pick up where the conversation left off.';

/** One compaction: the range's facts checked against a summary that keeps nothing, stored as a summary message. */
function compact(range: readonly Message[], seq: number, kept: readonly Message[] = []): Message[] {
  const facts = collectSummaryFacts(range, { kept });
  const { text } = verifySummary(DROP_EVERYTHING, facts, { budgetTokens: BUDGET_32K });
  return buildSummaryMessages({
    style: 'opencode',
    summaryText: text,
    compactionId: `c${seq}`,
    auto: true,
    messagesCompacted: range.length,
    createdAt: '2025-05-01T10:00:00Z',
  }).map((m, i) => ({ ...m, seq: seq + i }) as Message);
}

const summaryText = (messages: readonly Message[]): string =>
  messages.map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')).join('\n');
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

describe('the latest request, pinned whole', () => {
  it.each([
    ['a 32k window', BUDGET_32K, 11_200],
    ['an 8,192-token budget (128k and up)', 8_192, 16_384],
    ['a tiny budget keeps a floor', 100, 1_000],
  ])('allowance at %s', (_name, budget, chars) => {
    expect(latestRequestMaxChars(budget)).toBe(chars);
  });

  it('keeps a long only request whole through five compactions that add none, on one line as goal and latest', () => {
    expect(SPEC.length).toBeGreaterThan(4_000);
    let history: Message[] = conversation([
      user(SPEC),
      assistant([toolCall('read', { filePath: 'go.mod' }, 'module x')]),
    ]);
    for (let n = 1; n <= 5; n++) {
      const summary = compact(history, n * 100);
      const text = summaryText(summary);
      expect(text).toContain(`- Goal and latest request: ${oneLine(SPEC)}`);
      expect(text.split(oneLine(SPEC))).toHaveLength(2);
      history = [...summary, ...conversation([assistant(`Step ${n} done.`)], n * 100 + 10)];
    }
  });

  it('clips the goal once a newer request is the latest, which is pinned whole', () => {
    const newer = `Now also port the settings view. ${'It has many bindings to keep. '.repeat(60)}`;
    const first = compact(conversation([user(SPEC), assistant('Working.')]), 10);
    const second = compact([...first, ...conversation([user(newer), assistant('On it.')], 20)], 30);
    const section = parsePinnedSections(summaryText(second));
    expect(section.goal!.length).toBeLessThanOrEqual(PINNED_ITEM_MAX_CHARS);
    expect(section.latestRequest).toBe(oneLine(newer));
    // The third compaction, with no request of its own, carries the latest one forward.
    const third = compact([...second, ...conversation([assistant('Done.')], 40)], 50);
    expect(parsePinnedSections(summaryText(third)).latestRequest).toBe(oneLine(newer));
  });

  it('pins no latest request when the kept messages hold a newer one', () => {
    const summary = compact(conversation([user(SPEC), assistant('Working.')]), 10, [user('And the tests.')]);
    const section = parsePinnedSections(summaryText(summary));
    expect(section.latestRequest).toBeNull();
    expect(section.goal!.length).toBeLessThanOrEqual(PINNED_ITEM_MAX_CHARS);
  });

  it.each([
    ['fits', 'Fix the parser.', 1_000, 'Fix the parser.'],
    ['whitespace collapsed', 'Fix\n\n the   parser.', 1_000, 'Fix the parser.'],
  ])('whole when it %s', (_name, request, max, expected) => {
    expect(fitLatestRequest(request, max)).toBe(expected);
  });

  it('beyond its allowance, shows head and tail around a marker that counts what is left out', () => {
    const request = `HEAD ${'x'.repeat(30_000)} 😀 TAIL`;
    const fitted = fitLatestRequest(request, 2_000);
    expect(fitted.length).toBeLessThanOrEqual(2_000);
    expect(fitted.startsWith('HEAD ')).toBe(true);
    expect(fitted.endsWith('😀 TAIL')).toBe(true);
    expect(fitted).toMatch(/\[… [\d,]+ of 30,013 characters of this request not shown here: .*recall/);
    // No lone surrogate at either cut.
    expect(fitted).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });
});
