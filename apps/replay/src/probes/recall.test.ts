import { describe, expect, it } from 'vitest';
import { foundIn, lostFacts, probeRecall, recallQueryFor } from './recall';
import type { RetentionProbes } from './retention';

const GOAL = 'The nightly export crashes with an out-of-memory error on accounts with 200k invoices; fix it.';

const retention = (changes: Partial<RetentionProbes> = {}): RetentionProbes => ({
  files: [
    { path: 'src/export.ts', kind: 'modified', named: null },
    { path: 'src/csv.ts', kind: 'read', named: 'group' },
  ],
  goal: { text: GOAL, where: null },
  constraints: [
    { text: 'You must keep the CSV column order.', where: 'paraphrased' },
    { text: 'Never load all invoices at once.', where: null },
    { text: "Don't touch the snapshot files.", where: 'verbatim' },
  ],
  latestRequest: { text: 'Now add a regression test.', where: 'verbatim' },
  ...changes,
});

describe('lostFacts', () => {
  it('takes what the context does not hold verbatim: a paraphrase is not the text, a grouped file is named', () => {
    expect(lostFacts(retention())).toEqual([
      { kind: 'goal', text: GOAL },
      { kind: 'constraint', text: 'You must keep the CSV column order.' },
      { kind: 'constraint', text: 'Never load all invoices at once.' },
      { kind: 'file', text: 'src/export.ts' },
    ]);
  });

  it('takes each stated fact not there verbatim, after the constraints', () => {
    const facts = retention({
      facts: [
        { text: '4.17.21', where: null },
        { text: '500 ms', where: 'verbatim' },
      ],
    });
    expect(lostFacts(facts).map((f) => f.kind)).toEqual(['goal', 'constraint', 'constraint', 'fact', 'file']);
    expect(lostFacts(facts)).toContainEqual({ kind: 'fact', text: '4.17.21' });
  });

  it('takes the latest request when it is not there verbatim, and nothing when all is', () => {
    const lost = retention({ latestRequest: { text: 'Now add a regression test.', where: null } });
    expect(lostFacts(lost)).toContainEqual({ kind: 'latest', text: 'Now add a regression test.' });
    expect(lostFacts(retention({ goal: null, constraints: [], files: [] }))).toEqual([]);
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
  it('finds the text verbatim in one passage, whitespace collapsed', () => {
    expect(
      foundIn(
        ['… the user said:  Never load all\ninvoices at once. Then …'],
        'Never load all invoices at once.',
      ),
    ).toBe(true);
  });

  it('does not count a word-bag match, words added up across passages, or another case', () => {
    // Every content word (never, load, invoices, once), in another order: not the sentence.
    expect(foundIn(['invoices: load them in pages, never at once'], 'Never load all invoices at once.')).toBe(
      false,
    );
    expect(foundIn(['Never load', 'all invoices at once.'], 'Never load all invoices at once.')).toBe(false);
    expect(foundIn(['never load all invoices at once.'], 'Never load all invoices at once.')).toBe(false);
    expect(foundIn([], 'Never load all invoices at once.')).toBe(false);
  });
});

describe('probeRecall', () => {
  it('looks each missing item up in its listing first, then by a search of its words', async () => {
    const queries: string[] = [];
    const listings: string[] = [];
    const probe = await probeRecall(
      {
        search: async (query) => {
          queries.push(query);
          return {
            results: query.startsWith('never')
              ? [{ excerpt: 'unrelated' }, { excerpt: 'OK. Never load all invoices at once.' }]
              : [{ excerpt: 'The nightly export crashes with an out-of-memory error' }],
          };
        },
        listing: async (kind) => {
          listings.push(kind);
          return kind === 'files' ? 'src/export.ts\nsrc/csv.ts' : 'You must keep the CSV column order.';
        },
      },
      retention(),
    );
    expect(listings).toEqual(['facts', 'files']);
    expect(queries).toEqual([
      'nightly export crashes out-of-memory error accounts 200k invoices fix',
      'never load invoices once',
    ]);
    expect(probe).toEqual({
      facts: [
        // The passage holds the goal's opening only.
        { kind: 'goal', text: GOAL, found: false },
        { kind: 'constraint', text: 'You must keep the CSV column order.', found: true, via: 'listing' },
        { kind: 'constraint', text: 'Never load all invoices at once.', found: true, via: 'search' },
        // A file only recall returns is recoverable, not present.
        { kind: 'file', text: 'src/export.ts', found: true, via: 'listing' },
      ],
    });
  });

  it('searches when the route has no listing, and asks nothing when nothing is missing', async () => {
    const probe = await probeRecall(
      { search: async () => ({ results: [{ excerpt: 'edited src/export.ts' }] }), listing: async () => null },
      retention({ goal: null, constraints: [] }),
    );
    expect(probe).toEqual({ facts: [{ kind: 'file', text: 'src/export.ts', found: true, via: 'search' }] });
    const none = await probeRecall(
      { search: () => Promise.reject(new Error('no search expected')) },
      retention({ goal: null, constraints: [], files: [] }),
    );
    expect(none).toEqual({ facts: [] });
  });
});
