import { describe, expect, it } from 'vitest';
import { assistant, conversation, toolCall, user } from '../test-support/builders';
import { ledgerOfMessages } from './extract';
import { ArtifactLedgerSchema, ledgerFromStored } from './schema';
import type { ArtifactLedger } from './types';

const LEDGER = ledgerOfMessages(
  conversation([
    user('keep p99 under 250 ms on node 20'),
    assistant([
      toolCall('Edit', { file_path: 'src/a.ts' }, 'ok'),
      toolCall('Bash', { command: 'npm test' }, 'Tests: 1 failed\nExit code 1'),
    ]),
  ]),
);

describe('ledgerFromStored', () => {
  it('reads back a stored ledger unchanged', () => {
    const stored: unknown = JSON.parse(JSON.stringify(LEDGER));
    expect(ledgerFromStored(stored)).toEqual(LEDGER);
    expect(JSON.stringify(ledgerFromStored(stored))).toBe(JSON.stringify(LEDGER));
  });

  it('has the type the code writes', () => {
    const parsed: ArtifactLedger = ArtifactLedgerSchema.parse(LEDGER);
    expect(parsed.files).toHaveLength(1);
  });

  const broken: [string, (ledger: ArtifactLedger) => unknown][] = [
    ['another version', (ledger) => ({ ...ledger, version: 2 })],
    [
      'a path over 1,000 characters',
      (ledger) => ({ ...ledger, files: [{ ...ledger.files[0]!, path: 'a'.repeat(1_001) }] }),
    ],
    [
      'a command over 2,000 characters',
      (ledger) => ({ ...ledger, commands: [{ ...ledger.commands[0]!, command: 'x'.repeat(2_001) }] }),
    ],
    ['an unknown file kind', (ledger) => ({ ...ledger, files: [{ ...ledger.files[0]!, kind: 'renamed' }] })],
    ['a count of zero', (ledger) => ({ ...ledger, facts: [{ ...ledger.facts[0]!, count: 0 }] })],
    ['a list missing', ({ openErrors: _, ...rest }) => rest],
    ['not an object', () => 'ledger'],
  ];
  it.each(broken)('refuses %s', (_, corrupt) => {
    expect(ledgerFromStored(corrupt(LEDGER))).toBeNull();
  });
});
