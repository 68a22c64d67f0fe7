import { describe, expect, it } from 'vitest';
import { asc, eq } from 'drizzle-orm';
import { ledgerOfMessages, type ArtifactLedger } from '@compactor/core';
import {
  messagesFromRows,
  revertCompaction,
  schema,
  searchRecall,
  selectLatestLedger,
  type SessionRow,
} from '@compactor/db';
import { ledgerSegment } from './test-support/ledger-segments';
import { useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();

const policy = { keepRecent: { manualTokens: 1_500, manualCappedByAuto: false } };

async function compact(session: SessionRow) {
  const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
  const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
  expect(result.status).toBe('completed');
  return result.compaction!;
}

/** The ledger core extracts from every stored message before `boundarySeq` at once (summaries aside). */
async function wholeLedgerBefore(sessionPk: number, boundarySeq: number): Promise<ArtifactLedger> {
  const { db } = w.resources;
  const messageRows = await db
    .select()
    .from(schema.messages)
    .where(eq(schema.messages.sessionPk, sessionPk))
    .orderBy(asc(schema.messages.seq));
  const partRows = await db.select().from(schema.parts).where(eq(schema.parts.sessionPk, sessionPk));
  // The raw history: every output as stored, never cleared (a ledger reads commands' outcomes).
  const messages = messagesFromRows(
    messageRows,
    partRows.map((row) => ({ ...row, compactedAt: null })),
  );
  return ledgerOfMessages(messages.filter((m) => !m.summary && m.seq < boundarySeq));
}

const paths = (ledger: ArtifactLedger) => ledger.files.map((file) => file.path);

describe('the artifact ledger a compaction stores', () => {
  it('is the whole session ledger after three chained compactions, and a revert leaves the previous one in force', async () => {
    const session = await w.seedSession([...ledgerSegment(1), ...ledgerSegment(2)], { policy });
    const first = await compact(session);
    const afterFirst = await selectLatestLedger(w.resources.db, session.pk);
    expect(afterFirst?.compactionId).toBe(first.id);
    expect(paths(afterFirst!.ledger)).toContain('src/mod1/writer.ts');
    expect(afterFirst!.ledger).toEqual(await wholeLedgerBefore(session.pk, first.boundarySeq!));

    await w.append(session, ledgerSegment(3));
    const second = await compact(session);
    await w.append(session, ledgerSegment(4));
    const third = await compact(session);

    const stored = await selectLatestLedger(w.resources.db, session.pk);
    expect(stored?.compactionId).toBe(third.id);
    // Merged across the chain, it is what extracting everything compacted at once gives.
    expect(stored!.ledger).toEqual(await wholeLedgerBefore(session.pk, third.boundarySeq!));
    for (const module of [1, 2, 3]) {
      expect(paths(stored!.ledger)).toContain(`src/mod${module}/writer.ts`);
      expect(stored!.ledger.commands.map((c) => c.command)).toContain(`npm test -- mod${module}`);
    }
    expect(stored!.ledger.files.find((f) => f.path === 'src/mod1/writer.ts')?.kind).toBe('modified');
    expect(stored!.ledger.commands.find((c) => c.command === 'npm test -- mod1')?.outcome).toBe('passed');

    await revertCompaction(w.resources.db, { tenantId: 'tenant-a', compactionId: third.id, at: new Date() });
    const inForce = await selectLatestLedger(w.resources.db, session.pk);
    expect(inForce?.compactionId).toBe(second.id);
    expect(inForce!.ledger).toEqual(await wholeLedgerBefore(session.pk, second.boundarySeq!));
    expect(inForce!.ledger.throughSeq).toBeLessThan(stored!.ledger.throughSeq);
  });
});

describe('recall over tool arguments', () => {
  it('finds a call by a path only its arguments named, once a compaction put it behind the boundary', async () => {
    const session = await w.seedSession([...ledgerSegment(7), ...ledgerSegment(8)], { policy });
    const search = (query: string) =>
      searchRecall(w.resources.db, session.pk, {
        query,
        limit: 5,
        excerptChars: 300,
        pinSystemMessages: true,
      });
    // Before: nothing is behind a boundary, and no output or text names the file read.
    expect(await search('src/mod7/reader_1.ts')).toEqual([]);

    await compact(session);
    const hits = await search('src/mod7/reader_1.ts');
    expect(hits.map((hit) => hit.callId)).toEqual(['seg7_t1_c0']);
    expect(hits[0]!.tool).toBe('read');
    expect(hits[0]!.excerpt).toBe('src/mod7/reader_1.ts');
    // A command is found by what it ran; its output's matches are still shown by the output.
    const commands = await search('"npm test -- mod7"');
    expect(commands.map((hit) => hit.callId).sort()).toEqual(['seg7_t0_c2', 'seg7_t1_c2', 'seg7_t2_c2']);
  });
});
