/**
 * Seeding and the core reference for the prune-selection tests (`prune-selection.test.ts`, the
 * edge cases, and `prune-selection.property.test.ts`, random sessions): tool outputs of a given
 * size, compactions with summaries, earlier prune marks, and core's selection over the covered
 * view that the SQL must equal.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import {
  assembleContext,
  selectPrunableParts,
  type Message,
  type Role,
  type ToolPart,
  type ToolStatus,
} from '@compactor/core';
import { toolPart } from '@compactor/core/testing';
import { completeCompaction } from '../operations/complete-compaction';
import { loadContextRows } from '../operations/load-messages';
import type { NewMessage } from '../operations/new-message';
import { insertCompaction } from '../queries/compactions';
import { selectPrunablePartsInSql, type PruneSelectionOptions } from '../queries/prune-selection';
import { newMessage, text } from './fixtures';
import type { TestDatabase } from './test-database';

/** The helpers over one test file's database (`t.db` is read when a helper runs, inside a test). */
export function pruneSelectionFixtures(t: TestDatabase) {
  // ── Seeding ───────────────────────────────────────────────────────────────────────────────────

  /** A completed tool output of `tokens` tokens (`read` unless said otherwise), with call id `id`. */
  const out = (id: string, tokens: number, options: { tool?: string; status?: ToolStatus } = {}): ToolPart =>
    toolPart(options.tool ?? 'read', tokens, { callId: id, status: options.status ?? 'completed' });

  /** A message of `role` with a short text, then the given tool parts. */
  const msg = (role: Role, ...tools: ToolPart[]): NewMessage => newMessage(role, [text(role, 5), ...tools]);

  /** Marks these calls' outputs pruned, whatever their status, as emergency pruning or an old prune left them. */
  async function markPruned(sessionPk: number, callIds: string[]): Promise<void> {
    if (callIds.length === 0) return;
    await t.db.execute(sql`
      insert into part_prunes (session_pk, seq, idx, compacted_at, compacted_by)
      select session_pk, seq, idx, now(), 'earlier' from parts
      where session_pk = ${sessionPk} and call_id = any(${sql.param(callIds)}::text[])`);
  }

  let finishedAt = Date.UTC(2026, 0, 1);

  /** Completes a compaction with boundary `boundarySeq` and these summary messages (none: a truncate cut). */
  async function compact(sessionPk: number, boundarySeq: number, summaries: NewMessage[]): Promise<void> {
    const row = await insertCompaction(t.db, {
      id: `cmp_${randomUUID()}`,
      sessionPk,
      reason: 'auto',
      strategy: 'summarize',
    });
    await completeCompaction(t.db, {
      compactionId: row!.id,
      sessionPk,
      summaryMessages: summaries,
      boundarySeq,
      tokensBefore: 0,
      messagesBefore: 0,
      finishedAt: new Date((finishedAt += 1000)),
    });
  }

  async function lastSeq(sessionPk: number): Promise<number> {
    const result = await t.db.execute<{ seq: number }>(
      sql`select coalesce(max(seq), 0)::int as seq from messages where session_pk = ${sessionPk}`,
    );
    return result.rows[0]!.seq;
  }

  // ── The reference ─────────────────────────────────────────────────────────────────────────────

  /**
   * The covered view exactly as the queue loaded it before prune moved into SQL (queue
   * `loadCoveredView`): the context rows in core's order, stored parts, summaries kept, other
   * messages only up to `coversThroughSeq`.
   */
  async function coveredView(sessionPk: number, options: PruneSelectionOptions): Promise<Message[]> {
    const { pinSystemMessages, coversThroughSeq } = options;
    const { messages, compaction } = await loadContextRows(t.db, sessionPk, { pinSystemMessages });
    const ordered = assembleContext(messages, compaction ? [compaction] : [], { pinSystemMessages }).messages;
    const stored = new Map(messages.map((m) => [m.id, m]));
    return ordered.flatMap((m) => {
      const original = stored.get(m.id);
      return original && (original.summary || original.seq <= coversThroughSeq) ? [original] : [];
    });
  }

  /** Core's selection over the covered view; the SQL must agree with it exactly. */
  async function expectAgreement(sessionPk: number, options: PruneSelectionOptions) {
    const expected = selectPrunableParts(await coveredView(sessionPk, options), options.pruning);
    expect(await selectPrunablePartsInSql(t.db, sessionPk, options)).toEqual(expected);
    return expected;
  }

  /** The call ids a selection (or the marks of prune `by`) holds, oldest first. */
  const callIds = (selection: { parts: Array<{ callId: string }> }) => selection.parts.map((p) => p.callId);

  async function markedBy(sessionPk: number, by: string): Promise<string[]> {
    const result = await t.db.execute<{ call_id: string }>(sql`
      select p.call_id from part_prunes pp
      join parts p on p.session_pk = pp.session_pk and p.seq = pp.seq and p.idx = pp.idx
      where pp.session_pk = ${sessionPk} and pp.compacted_by = ${by}
      order by pp.seq, pp.idx`);
    return result.rows.map((r) => r.call_id);
  }

  return { out, msg, markPruned, compact, lastSeq, coveredView, expectAgreement, callIds, markedBy };
}
