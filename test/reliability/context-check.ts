/**
 * The context view checks: reads the context exactly as the API does and checks it against
 * snapshots of the session's rows (`sampleContext`, `stableContext`, `startContextReader`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { assembleContext, toOpenAIMessages, validateContext } from '@compactor/core';
import { loadContextRows, type Db } from '@compactor/db';

/** What a context read must agree with: one snapshot of the session's messages and compactions. */
interface Truth {
  messages: Array<{ id: string; seq: number; summary: boolean; compaction_id: string | null }>;
  compactions: Array<{
    id: string;
    status: string;
    boundary_seq: number | null;
    summary_message_ids: string[];
    finished_ms: number | null;
  }>;
  signature: string;
}

async function readTruth(db: Db, sessionPk: number): Promise<Truth> {
  return db.transaction(
    async (tx) => {
      const messages = (
        await tx.execute<Truth['messages'][number]>(
          sql`select id, seq, summary, compaction_id from messages where session_pk = ${sessionPk} order by seq`,
        )
      ).rows;
      const compactions = (
        await tx.execute<Truth['compactions'][number]>(
          sql`select id, status, boundary_seq, summary_message_ids, (extract(epoch from finished_at) * 1000)::float8 as finished_ms
              from compactions where session_pk = ${sessionPk} order by requested_at`,
        )
      ).rows;
      const signature = JSON.stringify([messages.map((m) => m.id), compactions.map((c) => [c.id, c.status])]);
      return { messages, compactions, signature };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

export interface ContextSample {
  /** `uncompacted`: no completed compaction yet; `compacted`: the latest completed one applies. */
  state: 'uncompacted' | 'compacted' | 'unstable';
  compactionId: string | null;
  /** Ids in the order the model sees them. */
  ids: string[];
  problems: string[];
}

/**
 * Reads the context view exactly as the API does (`loadContextRows` + core's `assembleContext`),
 * bracketed by two snapshots of the session's rows; when both agree (nothing committed in
 * between) the view must match them: it validates as an OpenAI request, and it is either every
 * message with no summary (and no summary row stored at all), or exactly the latest completed
 * compaction's summary message(s) followed by every message from its boundary on. `unstable`:
 * something committed during the read; the caller samples again.
 */
export async function sampleContext(db: Db, sessionPk: number): Promise<ContextSample> {
  const before = await readTruth(db, sessionPk);
  const rows = await loadContextRows(db, sessionPk);
  const view = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : []);
  const after = await readTruth(db, sessionPk);
  const ids = view.messages.map((m) => m.id);
  if (before.signature !== after.signature)
    return { state: 'unstable', compactionId: null, ids, problems: [] };

  const problems: string[] = [];
  const issues = validateContext(toOpenAIMessages(view));
  if (issues.length > 0) problems.push(`context does not validate: ${JSON.stringify(issues).slice(0, 500)}`);
  const completed = after.compactions
    .filter((c) => c.status === 'completed')
    .sort((a, b) => (a.finished_ms ?? 0) - (b.finished_ms ?? 0));
  const latest = completed.at(-1);
  const summaries = after.messages.filter((m) => m.summary);
  if (!latest) {
    if (summaries.length > 0) {
      problems.push(
        `summary messages ${summaries.map((m) => `${m.id}(${m.compaction_id})`).join(',')} stored while no compaction completed`,
      );
    }
    const expected = after.messages.filter((m) => !m.summary).map((m) => m.id);
    if (view.compactionId !== null)
      problems.push(`view names compaction ${view.compactionId} but none completed`);
    if (JSON.stringify(ids) !== JSON.stringify(expected)) {
      problems.push(
        `uncompacted view is not every message in order: got ${ids.join(',')}, expected ${expected.join(',')}`,
      );
    }
    return { state: 'uncompacted', compactionId: null, ids, problems };
  }
  if (view.compactionId !== latest.id)
    problems.push(`view applies ${view.compactionId}, latest completed is ${latest.id}`);
  if (latest.boundary_seq === null) problems.push(`completed compaction ${latest.id} has no boundary`);
  if (latest.summary_message_ids.length === 0)
    problems.push(`completed compaction ${latest.id} has no summary message`);
  const ownSummaries = summaries.filter((m) => m.compaction_id === latest.id).map((m) => m.id);
  if (JSON.stringify([...ownSummaries].sort()) !== JSON.stringify([...latest.summary_message_ids].sort())) {
    problems.push(
      `stored summary rows ${ownSummaries.join(',')} ≠ the compaction's ${latest.summary_message_ids.join(',')}`,
    );
  }
  const kept = after.messages
    .filter((m) => !m.summary && m.seq >= (latest.boundary_seq ?? Infinity))
    .map((m) => m.id);
  const expected = [...latest.summary_message_ids, ...kept];
  if (JSON.stringify(ids) !== JSON.stringify(expected)) {
    problems.push(
      `compacted view is not summary + messages from boundary ${latest.boundary_seq}: got ${ids.join(',')}, expected ${expected.join(',')}`,
    );
  }
  return { state: 'compacted', compactionId: latest.id, ids, problems };
}

/** `sampleContext`, retried while writes land in the middle of the read. */
export async function stableContext(db: Db, sessionPk: number, tries = 20): Promise<ContextSample> {
  for (let i = 0; i < tries; i++) {
    const sample = await sampleContext(db, sessionPk);
    if (sample.state !== 'unstable') return sample;
    await sleep(10);
  }
  throw new Error(`context of session ${sessionPk} never stable over ${tries} reads`);
}
/**
 * Reads the context of `sessions` in a loop until stopped; collects every violation instead of
 * throwing from the background (the test asserts on them).
 */
export function startContextReader(db: Db, sessionPks: number[], intervalMs = 30) {
  const stats = { reads: 0, unstable: 0, uncompacted: 0, compacted: 0, errors: 0 };
  const problems: string[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const pk of sessionPks) {
        if (stopped) break;
        try {
          const sample = await sampleContext(db, pk);
          stats.reads++;
          stats[sample.state]++;
          for (const p of sample.problems) if (problems.length < 50) problems.push(`session ${pk}: ${p}`);
        } catch (error) {
          // A read may fail while the test terminates backends; anything else is reported.
          stats.errors++;
          if (problems.length < 50) problems.push(`session ${pk}: read failed: ${(error as Error).message}`);
        }
      }
      await sleep(intervalMs);
    }
  })();
  return {
    stats,
    problems,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
