/**
 * The workflow benchmark's sessions: coding sessions of user requests and assistant turns that
 * each read a 40-line file, seeded as the API appends them, and a wait for compactions to end.
 */
import type { Part } from '@compactor/core';
import { insertSession, newId, type Db, type NewMessage, type SessionRow } from '@compactor/db';
import { sql } from 'drizzle-orm';
import { seedMessages } from '../seed-messages';

/**
 * Message `i` of a coding session: a user request, then an assistant turn reading a file. The
 * requests name their `session`, so sessions are not copies of each other: work remembered by
 * text (core's user words) must not be found again in the next session's compaction.
 */
export function benchMessage(i: number, session = 0): NewMessage {
  const user = i % 2 === 0;
  const parts: Part[] = user
    ? [
        {
          type: 'text',
          text: `please look at module ${i} and fix the failing test `.repeat(4) + `(session ${session})`,
          tokens: 44,
        },
      ]
    : [
        { type: 'text', text: `Reading src/module${i}.ts`, tokens: 6 },
        {
          type: 'tool',
          callId: `call_${i}`,
          tool: 'read',
          status: 'completed',
          input: { path: `src/module${i}.ts` },
          output: `export const value${i} = compute(${i}); // line\n`.repeat(40),
          error: null,
          compactedAt: null,
          tokens: 570,
          outputTokens: 560,
        },
      ];
  return {
    id: `m${i}`,
    role: user ? 'user' : 'assistant',
    parts,
    finish: user ? null : 'stop',
    error: null,
    usage: null,
    createdAt: new Date(1_700_000_000_000 + i * 1000),
    metadata: {},
    contentHash: `h${i}`,
  };
}

/** `count` sessions of `messages` messages each, summarised by the stub. */
export async function seedSessions(db: Db, count: number, messages: number): Promise<SessionRow[]> {
  const sessions: SessionRow[] = [];
  for (let s = 0; s < count; s++) {
    const session = await insertSession(db, {
      tenantId: 'bench',
      id: newId('ses'),
      modelId: 'stub-summarizer',
      provider: 'stub',
      contextWindow: 128_000,
      maxOutputTokens: 8_000,
      // One summarizer call per compaction (no chunking) keeps part 2's bound exact.
      policy: { prune: true },
      createHash: 'bench',
    });
    for (let i = 0; i < messages; i += 1_000) {
      await seedMessages(
        db,
        session!,
        Array.from({ length: Math.min(1_000, messages - i) }, (_, k) => benchMessage(i + k, s)),
      );
    }
    sessions.push(session!);
  }
  return sessions;
}

/** Waits until every compaction of `ids` has ended; throws when one did not complete. */
export async function waitUntilFinished(db: Db, ids: string[], timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const result = await db.execute<{ done: number; failed: number }>(sql`
      select count(*) filter (where status in ('completed', 'skipped', 'failed'))::int as done,
             count(*) filter (where status <> 'completed' and status not in ('pending', 'running'))::int as failed
      from compactions where id = any(${sql.param(ids)}::text[])`);
    const { done, failed } = result.rows[0]!;
    if (failed > 0) throw new Error(`${failed} compactions did not complete (failed or skipped)`);
    if (done === ids.length) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`only ${done}/${ids.length} finished`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One aligned row of the report: its label, then its figures. */
export const row = (label: string, value: string) => console.log(`${label.padEnd(62)} ${value}`);
