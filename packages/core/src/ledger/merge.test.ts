import { describe, expect, it } from 'vitest';
import type { Message } from '../model';
import { assistant, conversation, toolCall, user } from '../test-support/builders';
import { ledgerOfMessages } from './extract';
import { combineFileEffects, mergeLedgers, type FileEffect } from './merge';
import { emptyLedger, type ArtifactLedger } from './types';

const FILES = [
  'src/api/routes.ts',
  'src/api/auth.ts',
  'src/db/query.ts',
  'README.md',
  'test/api.test.ts',
  'docs/x.md',
];
const COMMANDS = ['npm test', 'npx tsc --noEmit', 'git status', 'go test ./...', 'npm run lint'];
const STATEMENTS = [
  'keep p99 under 250 ms',
  'we run node 20',
  'see https://example.com/spec',
  'call parseDate()',
];

/**
 * One compacted range of a long session: the same handful of files, commands and user statements
 * again and again (what real sessions do), with outcomes that change from range to range.
 */
function range(compaction: number, firstSeq: number): Message[] {
  const messages: Message[] = [];
  for (let turn = 0; turn < 6; turn += 1) {
    const i = compaction * 6 + turn;
    messages.push(user(`${STATEMENTS[i % STATEMENTS.length]!} (turn ${turn})`));
    messages.push(
      assistant([
        toolCall('Read', { file_path: FILES[i % FILES.length] }, '…'),
        toolCall(i % 4 === 0 ? 'Write' : 'Edit', { file_path: FILES[(i + 2) % FILES.length] }, 'ok'),
        toolCall(
          'Bash',
          { command: COMMANDS[i % COMMANDS.length] },
          i % 3 === 0 ? 'Exit code 1' : 'Exit code 0',
        ),
      ]),
    );
  }
  return conversation(messages, firstSeq);
}

function chain(compactions: number): { ledgers: ArtifactLedger[]; all: Message[] } {
  const ledgers: ArtifactLedger[] = [];
  const all: Message[] = [];
  let carried = emptyLedger();
  for (let compaction = 0; compaction < compactions; compaction += 1) {
    const messages = range(compaction, all.length + 1);
    all.push(...messages);
    carried = mergeLedgers(carried, ledgerOfMessages(messages));
    ledgers.push(carried);
  }
  return { ledgers, all };
}

describe('mergeLedgers', () => {
  it('across 10 chained compactions equals the ledger of the whole session', () => {
    const { ledgers, all } = chain(10);
    expect(ledgers.at(-1)).toEqual(ledgerOfMessages(all));
  });

  it('stays proportional to distinct artifacts, not to repetitions', () => {
    const { ledgers } = chain(10);
    const last = ledgers.at(-1)!;
    expect(last.files).toHaveLength(FILES.length);
    expect(last.commands).toHaveLength(COMMANDS.length);
    expect(new Set(last.facts.map((fact) => fact.text)).size).toBe(last.facts.length);
    // Every artifact is already known after two compactions; eight more only move counts and seqs.
    const sizes = ledgers.map((ledger) => JSON.stringify(ledger).length);
    expect(sizes.at(-1)! / sizes[1]!).toBeLessThan(1.1);
    expect(last.files.reduce((sum, file) => sum + file.count, 0)).toBe(10 * 6 * 2);
    expect(last.commands.reduce((sum, command) => sum + command.count, 0)).toBe(10 * 6);
  });

  it('is idempotent: merging a range already in changes nothing', () => {
    const { ledgers } = chain(3);
    const [first, second, third] = ledgers as [ArtifactLedger, ArtifactLedger, ArtifactLedger];
    expect(mergeLedgers(third, third)).toEqual(third);
    const lastRange = ledgerOfMessages(range(2, 25));
    expect(mergeLedgers(third, lastRange)).toEqual(third);
    expect(mergeLedgers(emptyLedger(), first)).toEqual(first);
    expect(mergeLedgers(second, emptyLedger())).toEqual(second);
  });

  it("merging again a range already in, older than the file's last touch, keeps the file's kind", () => {
    const session = conversation([
      assistant([toolCall('Write', { file_path: 'lib/c.py' }, 'ok')]),
      assistant([toolCall('Read', { file_path: 'lib/c.py' }, 'ok')]),
      assistant([toolCall('Read', { file_path: 'lib/c.py' }, 'ok')]),
    ]);
    const whole = ledgerOfMessages(session);
    expect(whole.files[0]!.kind).toBe('created');
    for (const message of session) expect(mergeLedgers(whole, ledgerOfMessages([message]))).toEqual(whole);
  });

  it('keeps the newest outcome of a command and recomputes what is open', () => {
    const older = ledgerOfMessages(
      conversation([assistant([toolCall('Bash', { command: 'npm test' }, 'Tests: 2 failed')])]),
    );
    expect(older.openErrors).toHaveLength(1);
    const newer = ledgerOfMessages(
      conversation([assistant([toolCall('Bash', { command: 'npm test' }, 'Tests: 9 passed')])], 7),
    );
    const merged = mergeLedgers(older, newer);
    expect(merged.commands).toEqual([
      {
        command: 'npm test',
        outcome: 'passed',
        evidence: 'Tests: 9 passed',
        runner: 'npm test',
        firstSeq: 1,
        lastSeq: 7,
        count: 2,
      },
    ]);
    expect(merged.openErrors).toEqual([]);
  });

  it('orders entries by recency across ledgers', () => {
    const older = ledgerOfMessages(
      conversation([
        assistant([toolCall('Read', { file_path: 'a' }, ''), toolCall('Read', { file_path: 'b' }, '')]),
      ]),
    );
    const newer = ledgerOfMessages(conversation([assistant([toolCall('Read', { file_path: 'a' }, '')])], 2));
    expect(mergeLedgers(older, newer).files.map((file) => file.path)).toEqual(['a', 'b']);
  });
});

describe('combineFileEffects', () => {
  const effects: FileEffect[] = [
    { kind: 'read' },
    { kind: 'modified' },
    { kind: 'created' },
    { kind: 'deleted' },
    { kind: 'created', recreated: true },
  ];
  const name = (effect: FileEffect): string => (effect.recreated ? 'recreated' : effect.kind);
  const table: Record<string, Record<string, string>> = {
    // earlier → later → result
    read: {
      read: 'read',
      modified: 'modified',
      created: 'modified',
      deleted: 'deleted',
      recreated: 'recreated',
    },
    modified: {
      read: 'modified',
      modified: 'modified',
      created: 'modified',
      deleted: 'deleted',
      recreated: 'recreated',
    },
    created: {
      read: 'created',
      modified: 'created',
      created: 'created',
      deleted: 'deleted',
      recreated: 'recreated',
    },
    deleted: {
      read: 'deleted',
      modified: 'recreated',
      created: 'recreated',
      deleted: 'deleted',
      recreated: 'recreated',
    },
    recreated: {
      read: 'recreated',
      modified: 'recreated',
      created: 'recreated',
      deleted: 'deleted',
      recreated: 'recreated',
    },
  };
  it.each(
    effects.flatMap((earlier) =>
      effects.map((later) => [name(earlier), name(later), earlier, later] as const),
    ),
  )('%s then %s', (earlierName, laterName, earlier, later) => {
    expect(name(combineFileEffects(earlier, later))).toBe(table[earlierName]![laterName]);
  });

  it('is associative, so however a session is cut, merging gives the same', () => {
    for (const a of effects) {
      for (const b of effects) {
        for (const c of effects) {
          expect(combineFileEffects(combineFileEffects(a, b), c)).toEqual(
            combineFileEffects(a, combineFileEffects(b, c)),
          );
        }
      }
    }
  });
});
