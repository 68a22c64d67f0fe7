import { describe, expect, it } from 'vitest';
import { factsInText, type FoundFact } from './facts';

const facts = (kind: FoundFact['kind'], ...texts: string[]): FoundFact[] =>
  texts.map((text) => ({ kind, text }));

describe('factsInText: what a user states in their own words', () => {
  const cases: { text: string; expected: FoundFact[] }[] = [
    {
      text: 'Fix the date parser in src/parser.ts. Never touch the public API.',
      expected: facts('path', 'src/parser.ts'),
    },
    {
      text: 'rename parseDate to parse_date_strict',
      expected: [...facts('identifier', 'parseDate', 'parse_date_strict')],
    },
    { text: 'call Foo.bar() and then reset()', expected: facts('identifier', 'Foo.bar()', 'reset()') },
    { text: 'set `retry.maxAttempts = 3` in config', expected: facts('identifier', 'retry.maxAttempts = 3') },
    {
      text: 'We are on node 20 and Python 3.12, pin to v1.2.3 (not 2.0.0-rc.1)',
      expected: facts('version', 'node 20', 'Python 3.12', 'v1.2.3', '2.0.0-rc.1'),
    },
    {
      text: 'p99 must stay under 250 ms, memory below 32 MiB, it is 3.5x slower and 95 % of runs pass',
      expected: [...facts('quantity', '250 ms', '32 MiB', '3.5x', '95 %')],
    },
    {
      text: 'timeout 30s, batch of 1,000 tokens, 2.5GB',
      expected: facts('quantity', '30s', '1,000 tokens', '2.5GB'),
    },
    {
      text: 'see https://github.com/org/repo/issues/134, and http://localhost:8080/api?x=1.',
      expected: facts('url', 'https://github.com/org/repo/issues/134', 'http://localhost:8080/api?x=1'),
    },
    { text: 'DATABASE_URL must point at the replica', expected: facts('identifier', 'DATABASE_URL') },
    { text: 'Describe what is in the image located at 012.png', expected: facts('path', '012.png') },
    { text: 'Please make it faster. It is slow.', expected: [] },
    { text: 'I have 3 ideas and 2 questions', expected: [] },
    { text: 'the hex 0x1f is not a multiplier', expected: [] },
    { text: 'parseDate, then parseDate again', expected: facts('identifier', 'parseDate') },
  ];
  it.each(cases)('$text', ({ text, expected }) => {
    expect(factsInText(text)).toEqual(expected);
  });

  it('reads lines up to 1,000 characters: a longer line is pasted data, not a statement', () => {
    const pasted = `${'x'.repeat(1_000)} node 20`;
    expect(factsInText(pasted)).toEqual([]);
    expect(factsInText(`${'x'.repeat(1_000)}\nnode 20`)).toEqual(facts('version', 'node 20'));
  });

  it('keeps facts in the order they appear', () => {
    expect(factsInText('v2.0.0 then `a.ts` then 5 ms').map((fact) => fact.text)).toEqual([
      'v2.0.0',
      'a.ts',
      '5 ms',
    ]);
  });
});
