import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { constraintSentences, isConstraintSentence, splitSentences } from './constraints';

describe('splitSentences', () => {
  it.each<[string, string, string[]]>([
    [
      'terminators followed by whitespace',
      'The export crashes at 200k invoices. Find the cause! Is it the CSV writer? Fix it.',
      ['The export crashes at 200k invoices.', 'Find the cause!', 'Is it the CSV writer?', 'Fix it.'],
    ],
    [
      'paths, versions and decimals stay whole',
      'Edit src/billing/export.ts and bump v1.2.3 to 1.5. Keep the 0.5 s timeout.',
      ['Edit src/billing/export.ts and bump v1.2.3 to 1.5.', 'Keep the 0.5 s timeout.'],
    ],
    [
      'abbreviations do not end a sentence',
      'Use a streaming writer, e.g. csv-stringify, etc. and test it.',
      ['Use a streaming writer, e.g. csv-stringify, etc. and test it.'],
    ],
    [
      'each line is its own sentence; list markers dropped',
      'Constraints:\n- Do not change the CSV column order.\n* Stay on Node 20\n1. Never log PII\n> always squash',
      [
        'Constraints:',
        'Do not change the CSV column order.',
        'Stay on Node 20',
        'Never log PII',
        'always squash',
      ],
    ],
    [
      'fenced code is not the user speaking',
      'Look at this:\n```ts\n// must never be null\nconst x = y!;\n```\nMake sure it compiles.',
      ['Look at this:', 'Make sure it compiles.'],
    ],
    ['blank text', '  \n\n ', []],
  ])('%s', (_name, input, expected) => {
    expect(splitSentences(input)).toEqual(expected);
  });
});

describe('isConstraintSentence', () => {
  it.each<[string, boolean]>([
    // must / mustn't / make sure: anywhere.
    ['The export must stream rows instead of building the file in memory.', true],
    ['You mustn’t touch the generated client.', true],
    ['Please make sure `npm test -- billing` passes before you say it is done.', true],
    ['Can you make sure the cron still runs after the 02:00 backup?', true],
    // never / always / do not / don't: as imperatives.
    ['Never run the migration against production.', true],
    ['NEVER force-push to main', true],
    ['Always use pnpm, not npm.', true],
    ['Do not change the CSV column order: finance imports it as is.', true],
    ["Don't add new dependencies.", true],
    ['Dont retry on a 400', true],
    ['If the export fails, don’t retry it automatically.', true],
    ['Use tabs; never spaces.', true],
    ['The rule — always squash merge — applies here too.', true],
    ['And please never commit the .env file.', true],
    ['We always squash before merging.', true],
    ['I want you to never call the billing API from tests.', true],
    ['You should always run the linter first.', true],
    ['"Never" means never: do not deploy on Fridays.', true],
    // Statements and questions that only use the words.
    ['It always fails on CI with exit code 137.', false],
    ["I don't know why the heap grows.", false],
    ['The job never finishes on accounts with 200k invoices.', false],
    ['Should we always use pnpm?', false],
    ['Why does it always time out?', false],
    ['Never mind, the tests pass now.', false],
    ['Never.', false],
    ['Stay compatible with Node 20.', false],
    ['Run the tests before you say it is done.', false],
    // only: as an imperative, before or after an instruction verb, or addressed.
    ['Only change files under src/.', true],
    ['Use only the standard library.', true],
    ['Touch only the parser module.', true],
    ['Please only edit the tests, not the fixtures.', true],
    ['You should only run the billing suite.', true],
    ['Fix the import, and only use relative paths.', true],
    ['Keep the CLI as is; update only the docs.', true],
    ['Just run only the unit tests', true],
    // only: in statements about the code or the user.
    ['It only fails on CI.', false],
    ['I only saw it once.', false],
    ['The export only breaks for accounts with 200k invoices.', false],
    ['Build only fails on CI.', false],
    ['Only the first row is missing.', false],
    ['This is the only place that calls the parser.', false],
    ['Does it only happen on Node 20?', false],
  ])('%s → %s', (sentence, expected) => {
    expect(isConstraintSentence(sentence)).toBe(expected);
  });
});

describe('constraintSentences', () => {
  it('picks the constraint sentences of a real first request, as written', () => {
    const request = [
      'The nightly billing export crashes with "JavaScript heap out of memory" on accounts with more than 200k invoices. Find the cause and fix it.',
      'Constraints:',
      '- Do not change the CSV column order: finance imports it as is.',
      '- Stay compatible with Node 20.',
      '- Never run the migration against production. Staging is fine.',
      '- Only touch files under src/billing/.',
      'It always crashes after about 40 minutes, e.g. at 02:40. It only happens on large accounts.',
    ].join('\n');
    expect(constraintSentences(request)).toEqual([
      'Do not change the CSV column order: finance imports it as is.',
      'Never run the migration against production.',
      'Only touch files under src/billing/.',
    ]);
  });
});

describe('isConstraintSentence: two words at least', () => {
  it('tells one word from two as splitting at whitespace did, over any whitespace', () => {
    const space = fc.constantFrom(' ', '\t', '\n', '\u00a0', '\u2003', '\u3000', '\ufeff', '\u2028', '');
    const word = fc.constantFrom('must', 'Never', 'never', 'only', 'use', '’', '?', 'x', '');
    fc.assert(
      fc.property(fc.array(fc.oneof(space, word), { maxLength: 8 }), (chunks) => {
        const sentence = chunks.join('');
        const text = sentence.replace(/[’‘]/g, "'").trim();
        if (text.split(/\s+/).length < 2) expect(isConstraintSentence(sentence)).toBe(false);
        // With two words, the same sentence with its whitespace runs as single spaces answers alike.
        else expect(isConstraintSentence(sentence)).toBe(isConstraintSentence(text.split(/\s+/).join(' ')));
      }),
      { numRuns: 3_000 },
    );
  });
});
