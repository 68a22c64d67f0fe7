import { describe, expect, it } from 'vitest';
import { parsePinnedSections, renderPinnedSection } from './pinned-section';
import { collectSummaryFacts, verifySummary } from './summary-check';
import { buildSummaryMessages } from './summary-messages';
import { assistant, conversation, user } from './test-support/builders';

const GOAL = 'Add ISO week dates to the date parser in src/parser.ts.';
const REPEATED = 'Never edit the generated files under src/gen/.';
const rules = Array.from(
  { length: 40 },
  (_, i) => `Rule ${i + 1}: never call the deprecated helper legacyFormat${i}() in new code.`,
);

/** A summary message pair carrying `text`, as a compaction stores it. */
const stored = (text: string, seq: number) =>
  buildSummaryMessages({
    style: 'opencode',
    summaryText: text,
    compactionId: `c${seq}`,
    auto: true,
    messagesCompacted: 6,
    createdAt: '2025-05-01T10:00:00Z',
  }).map((m, i) => ({ ...m, seq: seq + i }));

describe('constraint counts across compactions', () => {
  it('renders and reads back how often a constraint was stated', () => {
    const section = renderPinnedSection({
      goal: GOAL,
      constraints: ['Use only the standard library.', REPEATED],
      constraintCounts: [1, 3],
      constraintsNotListed: 0,
      instructions: null,
      latestRequest: null,
    });
    expect(section).toContain('- Constraint: Use only the standard library.');
    expect(section).toContain(`- Constraint (stated 3 times): ${REPEATED}`);
    expect(parsePinnedSections(section)).toMatchObject({
      constraints: ['Use only the standard library.', REPEATED],
      constraintCounts: [1, 3],
    });
  });

  it('keeps a constraint stated three times before the first compaction ahead of newer ones in the second', () => {
    const first = collectSummaryFacts(
      conversation([
        user(GOAL),
        assistant('Ok.'),
        user(`Careful. ${REPEATED}`),
        assistant('Ok.'),
        user(`I said it before. ${REPEATED}`),
        assistant('Sorry.'),
        user(`Third time. ${REPEATED}`),
        assistant('Reverted.'),
      ]),
      { kept: [user('Go on.')] },
    );
    expect(first.constraintCounts).toEqual([3]);
    const firstSummary = verifySummary('Work in progress.', first, { budgetTokens: 2_000 }).text;
    expect(firstSummary).toContain(`- Constraint (stated 3 times): ${REPEATED}`);

    const second = collectSummaryFacts(
      [...stored(firstSummary, 7), ...conversation([user(rules.join('\n')), assistant('Noted.')], 9)],
      { kept: [user('Go on.')] },
    );
    expect(second.constraints[0]).toBe(REPEATED);
    expect(second.constraintCounts![0]).toBe(3);
    // A budget that holds a few constraints: the repeated one first, then the newest rules.
    const checked = verifySummary('Work in progress.', second, { budgetTokens: 600 });
    const listed = parsePinnedSections(checked.text).constraints;
    expect(listed[0]).toBe(REPEATED);
    expect(listed.slice(1)).toEqual(rules.slice(rules.length - (listed.length - 1)));
    expect(checked.unlistedConstraints).toEqual(rules.slice(0, rules.length - (listed.length - 1)).reverse());
  });
});
