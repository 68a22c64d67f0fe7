import { describe, expect, it } from 'vitest';
import {
  LEDGER_BLOCK_TAG,
  LEDGER_HEADING,
  resolvePolicy,
  summaryBudgetTokens,
  type Message,
} from '@compactor/core';
import { sessionModel, type SessionRow } from '@compactor/db';
import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import { ledgerSegment } from './test-support/ledger-segments';
import { textOf, useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();

const keepRecent = { manualTokens: 1_500, manualCappedByAuto: false };

async function compact(session: SessionRow): Promise<void> {
  const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
  const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
  expect(result.status).toBe('completed');
}

/** The served summary message's text and its ledger block (tags included). */
async function servedLedger(session: SessionRow): Promise<{ summary: string; block: string }> {
  const { messages } = await w.context(session.pk);
  const summaries = messages.filter((m: Message) => m.summary && m.parts.some((p) => p.type === 'text'));
  expect(summaries).toHaveLength(1);
  const summary = textOf(summaries[0]);
  const open = `<${LEDGER_BLOCK_TAG}>`;
  const close = `</${LEDGER_BLOCK_TAG}>`;
  const start = summary.indexOf(open);
  expect(start, 'the summary shows a ledger block').toBeGreaterThanOrEqual(0);
  // One block only: the previous summary's was stripped before it was fed back.
  expect(summary.indexOf(open, start + 1)).toBe(-1);
  return { summary, block: summary.slice(start, summary.indexOf(close) + close.length) };
}

/** The block's share of the summary budget, as the fit step bounds it. */
function listsBudget(session: SessionRow, policyInput: Parameters<typeof resolvePolicy>[0]): number {
  const policy = resolvePolicy(policyInput);
  return 0.25 * summaryBudgetTokens(sessionModel(session), policy);
}

describe('the ledger block a summary message shows', () => {
  it('lists modified files before read ones, grouped, and commands with their outcome, within its share, once across a chain', async () => {
    const policy = { keepRecent };
    const session = await w.seedSession([...ledgerSegment(1), ...ledgerSegment(2)], { policy });
    await compact(session);
    await w.append(session, ledgerSegment(3));
    await compact(session);

    const { summary, block } = await servedLedger(session);
    expect(block).toContain(LEDGER_HEADING);
    // The file lists it replaces are gone.
    expect(summary).not.toContain('<read-files>');
    expect(summary).not.toContain('<modified-files>');
    const modified = block.indexOf('Files modified:');
    const read = block.indexOf('Files read:');
    expect(modified).toBeGreaterThan(0);
    expect(read).toBeGreaterThan(modified);
    // Both compactions' modules: the ledger in force was merged before it was rendered.
    for (const module of [1, 2]) {
      expect(block).toMatch(new RegExp(`src/mod${module}/(\\{[^}]*)?reader_0\\.ts`));
      expect(block).toContain(`npm test -- mod${module} — passed`);
    }
    // Three readers of one module sit under their directory once.
    expect(block).toMatch(/src\/mod1\/\{reader_\d\.ts, reader_\d\.ts, reader_\d\.ts\}/);
    const count = getTokenizer(encodingForModel(session.modelId));
    expect(count.countSync(block)).toBeLessThanOrEqual(listsBudget(session, policy));
  });

  it('names what does not fit by count with the recall call that lists it', async () => {
    const policy = { keepRecent, summarizer: { maxOutputTokens: 480 } };
    const session = await w.seedSession([...ledgerSegment(1), ...ledgerSegment(2)], { policy });
    await compact(session);
    await w.append(session, ledgerSegment(3));
    await compact(session);

    const { block } = await servedLedger(session);
    expect(block).toMatch(/Not listed for space: .*\d+ files? \(recall\?kind=files\)/);
    // Modified files fill first: the writers are listed, read files are what overflowed.
    expect(block).toContain('Files modified:');
    expect(block).toContain('writer.ts');
    const count = getTokenizer(encodingForModel(session.modelId));
    expect(count.countSync(block)).toBeLessThanOrEqual(listsBudget(session, policy));
  });
});
