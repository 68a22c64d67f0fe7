import { describe, expect, it } from 'vitest';
import { LEDGER_BLOCK_TAG, stripFileOpsBlocks } from './file-ops-render';
import { emptyLedger, type ArtifactLedger, type LedgerFile } from './ledger/types';
import type { Message } from './model';
import { buildSummaryMessages, extractPreviousSummary, fitLedgerBlock } from './summary-messages';
import { estimateTokens } from './tokens';

const file = (path: string, kind: LedgerFile['kind'], seq: number): LedgerFile => ({
  path,
  kind,
  firstSeq: seq,
  lastSeq: seq,
  count: 1,
});

function ledgerOf(readCount: number): ArtifactLedger {
  const read = Array.from({ length: readCount }, (_, i) => file(`src/lib/module_${i}.ts`, 'read', 100 - i));
  return {
    ...emptyLedger(),
    throughSeq: 100,
    files: [file('src/api/routes.ts', 'modified', 90), file('src/api/auth.ts', 'modified', 80), ...read],
    commands: [{ command: 'npm test', outcome: 'passed', exitCode: 0, firstSeq: 10, lastSeq: 95, count: 3 }],
  };
}

const count = estimateTokens;

describe('fitLedgerBlock', () => {
  it('renders modified files grouped before read ones, and commands with their last outcome', () => {
    const block = fitLedgerBlock(ledgerOf(2), 1_000, count);
    expect(block.startsWith(`<${LEDGER_BLOCK_TAG}>\n`)).toBe(true);
    expect(block.endsWith(`</${LEDGER_BLOCK_TAG}>`)).toBe(true);
    expect(block).toContain('src/api/{routes.ts, auth.ts}');
    expect(block).toContain('npm test — passed, exit code 0, 3 runs');
    expect(block.indexOf('Files modified:')).toBeLessThan(block.indexOf('Files read:'));
    expect(block).not.toContain('Not listed for space');
  });

  it('stays within its budget, tags included, and names the rest with the recall call', () => {
    for (const budget of [40, 80, 160]) {
      const block = fitLedgerBlock(ledgerOf(200), budget, count);
      expect(count(block)).toBeLessThanOrEqual(budget);
      expect(block).toMatch(/Not listed for space: [\d,]+ files \(recall\?kind=files\)/);
    }
    expect(fitLedgerBlock(ledgerOf(200), 3, count)).toBe('');
    expect(fitLedgerBlock(emptyLedger(), 1_000, count)).toBe('');
  });
});

describe('a summary message showing the ledger', () => {
  const base = {
    style: 'user' as const,
    compactionId: 'c1',
    auto: false,
    messagesCompacted: 4,
    createdAt: '2026-01-01T00:00:00.000Z',
    fileOps: { readFiles: ['a.ts'], modifiedFiles: ['b.ts'] },
  };

  it('shows the block in place of the file lists, keeping the lists in metadata', () => {
    const ledgerBlock = fitLedgerBlock(ledgerOf(2), 1_000, count);
    const [written] = buildSummaryMessages({ ...base, summaryText: 'Summary.', ledgerBlock });
    const text = written!.parts[0]!.type === 'text' ? written!.parts[0]!.text : '';
    expect(text).toContain(`Summary.\n\n${ledgerBlock}`);
    expect(text).not.toContain('<read-files>');
    expect(written!.metadata).toMatchObject({ readFiles: ['a.ts'], modifiedFiles: ['b.ts'] });
  });

  it('is fed back as the previous summary without the block, however often it is rewritten', () => {
    const ledgerBlock = fitLedgerBlock(ledgerOf(2), 1_000, count);
    let summaryText = 'Summary.';
    for (let round = 0; round < 3; round++) {
      const written = buildSummaryMessages({ ...base, summaryText, ledgerBlock });
      const stored = written.map((m, i) => ({ ...m, seq: i + 1 }) as Message);
      summaryText = extractPreviousSummary(stored)!;
      expect(summaryText).toBe('Summary.');
    }
  });

  it('strips a block whose entries hold an escaped closing tag whole', () => {
    const ledger: ArtifactLedger = {
      ...emptyLedger(),
      files: [file(`src/</${LEDGER_BLOCK_TAG}>x.ts`, 'modified', 1)],
    };
    const block = fitLedgerBlock(ledger, 1_000, count);
    expect(stripFileOpsBlocks(`Summary.\n\n${block}\n\nAfter.`)).toBe('Summary.\n\nAfter.');
  });
});
