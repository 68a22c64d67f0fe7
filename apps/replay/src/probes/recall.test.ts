import { describe, expect, it } from 'vitest';
import { foundIn, lostFacts, probeRecall, recallQueryFor } from './recall';
import type { RetentionProbes } from './retention';

const GOAL = 'The nightly export crashes with an out-of-memory error on accounts with 200k invoices; fix it.';

const retention = (changes: Partial<RetentionProbes> = {}): RetentionProbes => ({
  files: [{ path: 'src/export.ts', kind: 'modified', inSummary: false }],
  goal: { text: GOAL, where: null },
  constraints: [
    { text: 'You must keep the CSV column order.', where: 'summary' },
    { text: 'Never load all invoices at once.', where: null },
    { text: "Don't touch the snapshot files.", where: 'kept' },
  ],
  latestRequest: { text: 'Now add a regression test.', kept: false },
  ...changes,
});

describe('lostFacts', () => {
  it('takes the goal and the constraints found nowhere in the context, in order', () => {
    expect(lostFacts(retention())).toEqual([
      { kind: 'goal', text: GOAL },
      { kind: 'constraint', text: 'Never load all invoices at once.' },
    ]);
  });

  it('takes nothing when the context kept every fact (files and the latest request are not facts searched)', () => {
    const kept = retention({
      goal: { text: GOAL, where: 'summary' },
      constraints: [{ text: 'Never load all invoices at once.', where: 'kept' }],
    });
    expect(lostFacts(kept)).toEqual([]);
    expect(lostFacts(retention({ goal: null, constraints: [] }))).toEqual([]);
  });
});

describe('recallQueryFor', () => {
  it('searches by the content words, without the punctuation the route reads as operators', () => {
    expect(recallQueryFor('- Do not change the CSV column order: finance imports it as is.')).toBe(
      'change csv column order finance imports',
    );
    expect(recallQueryFor('Never say "out-of-memory" or OOM.')).toBe('never say out-of-memory oom');
    expect(recallQueryFor(GOAL)).toBe(
      'nightly export crashes out-of-memory error accounts 200k invoices fix',
    );
  });

  it('keeps as many whole words as 500 characters hold', () => {
    const words = Array.from({ length: 120 }, (_, i) => `word${String(i).padStart(3, '0')}`);
    const query = recallQueryFor(words.join(' '));
    expect(query).toBe(words.slice(0, 62).join(' ')); // 62 words of 7 and 61 spaces: 495; one more is 503
    expect(recallQueryFor(`${'a'.repeat(600)} b`)).toBe('a'.repeat(500));
  });

  it('sends a fact without content words as it is, never half of a surrogate pair', () => {
    expect(recallQueryFor('Do it now!')).toBe('Do it now!');
    expect(recallQueryFor(`${'!'.repeat(499)}😀`)).toBe('!'.repeat(499));
  });
});

describe('foundIn', () => {
  it('finds the sentence, or all of its content words, in one passage', () => {
    expect(
      foundIn(
        ['… the user said: never load ALL invoices at once. Then …'],
        'Never load all invoices at once.',
      ),
    ).toBe(true);
    // Every content word (never, load, invoices, once), in another order.
    expect(foundIn(['invoices: load them in pages, never at once'], 'Never load all invoices at once.')).toBe(
      true,
    );
  });

  it('does not add words up across passages, and misses a passage without one of them', () => {
    expect(foundIn(['never load', 'all invoices at once'], 'Never load all invoices at once.')).toBe(false);
    expect(foundIn(['load all invoices at once'], 'Never load all invoices at once.')).toBe(false);
    expect(foundIn([], 'Never load all invoices at once.')).toBe(false);
  });
});

describe('probeRecall', () => {
  it('searches once per lost fact with its words and says which the passages carry', async () => {
    const queries: string[] = [];
    const probe = await probeRecall(async (query) => {
      queries.push(query);
      return {
        results: query.startsWith('never')
          ? [
              { excerpt: 'unrelated' },
              { excerpt: 'You must keep the CSV column order. Never load all invoices at once.' },
            ]
          : [{ excerpt: 'The nightly export crashes with an out-of-memory error' }],
      };
    }, retention());
    expect(queries).toEqual([
      'nightly export crashes out-of-memory error accounts 200k invoices fix',
      'never load invoices once',
    ]);
    expect(probe).toEqual({
      facts: [
        // The passage holds the goal's opening only: accounts, 200k, invoices, fix are missing.
        { kind: 'goal', text: GOAL, found: false },
        { kind: 'constraint', text: 'Never load all invoices at once.', found: true },
      ],
    });
  });

  it('asks nothing when nothing was lost', async () => {
    const probe = await probeRecall(
      () => Promise.reject(new Error('no search expected')),
      retention({ goal: null, constraints: [] }),
    );
    expect(probe).toEqual({ facts: [] });
  });
});
