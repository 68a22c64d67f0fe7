import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, ToolPart } from '../model';
import { assistant, conversation, toolCall, user } from '../test-support/builders';
import { ledgerOfMessages } from './extract';
import { mergeLedgers } from './merge';
import { emptyLedger } from './types';

const PATHS = ['src/a.ts', 'src/b.ts', 'lib/c.py', 'README.md'];
const COMMANDS = ['npm test', 'npx vitest run a', 'go test ./...', 'ls'];
const OUTPUTS = ['Exit code 1', 'Exit code 0', 'Tests: 2 failed', 'Tests: 3 passed', 'plain output'];
const STATEMENTS = [
  'keep it under 250 ms',
  'we use node 20',
  'call parseDate()',
  'see https://example.com/x',
];

const toolCallArbitrary: fc.Arbitrary<ToolPart> = fc.oneof(
  fc
    .tuple(fc.constantFrom('Read', 'Write', 'Edit', 'delete_file'), fc.constantFrom(...PATHS))
    .map(([tool, path]) => toolCall(tool, { file_path: path }, 'ok')),
  fc
    .tuple(fc.constantFrom(...COMMANDS), fc.constantFrom(...OUTPUTS))
    .map(([command, output]) => toolCall('Bash', { command }, output)),
  fc.constantFrom(...PATHS).map((path) => toolCall('Bash', { command: `rm ${path}` }, '')),
);

const messageArbitrary: fc.Arbitrary<Message> = fc.oneof(
  fc.array(toolCallArbitrary, { minLength: 1, maxLength: 3 }).map((parts) => assistant(parts)),
  fc.constantFrom(...STATEMENTS).map((text) => user(text)),
);

describe('mergeLedgers, for any session cut into any ranges', () => {
  it('folding the ranges’ ledgers gives the whole session’s ledger, and merging any range again changes nothing', () => {
    fc.assert(
      fc.property(
        fc.array(messageArbitrary, { minLength: 1, maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (generated, cutSeeds) => {
          const session = conversation(generated);
          const cuts = [...new Set(cutSeeds.map((seed) => seed % session.length))].sort((a, b) => a - b);
          const bounds = [0, ...cuts.filter((cut) => cut > 0), session.length];
          const ranges = bounds.slice(1).map((end, index) => session.slice(bounds[index], end));
          const folded = ranges.reduce(
            (carried, range) => mergeLedgers(carried, ledgerOfMessages(range)),
            emptyLedger(),
          );
          expect(folded).toEqual(ledgerOfMessages(session));
          for (const range of ranges) expect(mergeLedgers(folded, ledgerOfMessages(range))).toEqual(folded);
        },
      ),
      { numRuns: 300 },
    );
  });
});
