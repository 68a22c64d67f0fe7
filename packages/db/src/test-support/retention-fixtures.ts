import { randomUUID } from 'node:crypto';
import type { Db } from '../client';
import { appendTestMessages } from './append-test-messages';
import { completeCompaction } from '../operations/complete-compaction';
import { insertCompaction } from '../queries/compactions';
import { markPartsCompacted } from '../queries/parts';
import { createTestSession, newMessage, text, tool } from './fixtures';

/** "Now" of the retention tests; `--older-than-days 30` puts the cutoff at 2026-05-02. */
export const RETENTION_NOW = new Date('2026-06-01T00:00:00Z');
/** Created long before the cutoff. */
export const OLD = new Date('2026-01-01T00:00:00Z');
/** Created after the cutoff. */
export const RECENT = new Date('2026-05-30T00:00:00Z');

/**
 * A compacted session whose every purge category is represented (seq: message):
 *   1 system (pinned, behind the boundary: never purged)     2 user u1 (old: superseded)
 *   3 assistant a1 + pruned call_1 (old: superseded)         4 user u2 (behind, but recent: kept)
 *   5 assistant a2 + pruned call_2 (in the view: output purged only)
 *   6 user u3   7 assistant a3 + call_3 (not pruned: kept)   8 summary of the compaction (boundary 5)
 */
export async function seedCompactedSession(db: Db, tenantId: string) {
  const session = await createTestSession(db, tenantId);
  const at = (createdAt: Date, id: string) => ({ id, createdAt });
  await appendTestMessages(db, session.pk, [
    newMessage('system', [text('You are a careful coding agent.')], at(OLD, 'sys')),
    newMessage('user', [text('Fix the failing parser test, keep the public API.')], at(OLD, 'u1')),
    newMessage('assistant', [text('Reading the parser.'), tool('call_1', 'x'.repeat(400))], at(OLD, 'a1')),
    newMessage('user', [text('Also check the lexer.')], at(RECENT, 'u2')),
    newMessage('assistant', [tool('call_2', 'y'.repeat(300))], at(OLD, 'a2')),
    newMessage('user', [text('Now run the tests.')], at(OLD, 'u3')),
    newMessage('assistant', [tool('call_3', 'z'.repeat(200))], at(OLD, 'a3')),
  ]);
  await markPartsCompacted(
    db,
    session.pk,
    [
      { seq: 3, callId: 'call_1' },
      { seq: 5, callId: 'call_2' },
    ],
    { at: OLD, by: 'prune_test' },
  );
  const compaction = await insertCompaction(db, {
    id: `cmp_${randomUUID()}`,
    sessionPk: session.pk,
    reason: 'auto',
    strategy: 'summarize',
  });
  await completeCompaction(db, {
    compactionId: compaction!.id,
    sessionPk: session.pk,
    summaryMessages: [
      newMessage('assistant', [text('Summary: parser test failing.')], at(OLD, `sum_${session.pk}`)),
    ],
    boundarySeq: 5,
    tokensBefore: 900,
    messagesBefore: 7,
    finishedAt: OLD,
  });
  return session;
}

/**
 * What {@link seedCompactedSession} leaves to purge: u1 and a1 (superseded, their parts' content:
 * texts, call_1's input JSON and output) and call_2's pruned output.
 */
export const SEEDED_SESSION_PURGE = {
  supersededMessages: 2,
  supersededParts: 3,
  prunedOutputs: 1,
  bytes:
    'Fix the failing parser test, keep the public API.'.length +
    'Reading the parser.'.length +
    // jsonb's text form, as stored: a space after the colon.
    '{"path": "call_1.ts"}'.length +
    400 +
    300,
};
