/**
 * The statements a compaction sends at 100k, for the scale benchmark's plans: the covered view's
 * windows and head (a never-compacted session read from its newest message back, then forward
 * from the middle, with and without tool outputs), the request's insert with its tenant rank,
 * and the per-tenant cap's and deferred compactions' statements, with another tenant's active
 * and deferred compactions in the same tables.
 */
import type pg from 'pg';
import {
  compactionSince,
  countActiveCompactionsOfTenant,
  deferCompaction,
  insertCompactionWithOutbox,
  oldestDeferredCompaction,
  selectViewHead,
  selectViewWindow,
  tenantsWithDeferredCompactions,
  type Db,
} from '@compactor/db';
import { pathRecorder, type QueryRecorder, type RecordedPath } from './plans';

const WINDOW = 500;
/** Finished compactions per session of the other tenant, beside its active ones. */
const HISTORY_PER_SESSION = 1_000;

/**
 * Gives `otherTenant` a history of finished compactions, active ones on `activeSessions` of its
 * sessions and deferred ones on the rest (what the tenant- and session-scoped statements must not
 * read); returns an undo.
 */
async function crowdOtherTenant(
  pool: pg.Pool,
  otherTenant: string,
  activeSessions: number,
): Promise<() => Promise<void>> {
  await pool.query(
    `with s as (select pk, tenant_id, row_number() over (order by pk) as n from sessions where tenant_id = $1)
     insert into compactions (id, session_pk, tenant_id, reason, strategy, status)
     select 'cmp_plan_' || pk, pk, tenant_id, 'manual', 'summarize', 'pending' from s where n <= $2::int`,
    [otherTenant, activeSessions],
  );
  await pool.query(
    `with s as (select pk, tenant_id, row_number() over (order by pk) as n from sessions where tenant_id = $1)
     insert into deferred_compactions (session_pk, tenant_id, reason, max_active)
     select pk, tenant_id, 'auto', $2::int from s where n > $2::int`,
    [otherTenant, activeSessions],
  );
  // A history: every session of the other tenant compacted 1,000 times before.
  await pool.query(
    `insert into compactions (id, session_pk, tenant_id, reason, strategy, status, requested_at)
     select 'cmp_plan_history_' || s.pk || '_' || g, s.pk, s.tenant_id, 'auto', 'summarize', 'completed',
            timestamptz '2025-01-01' + g * interval '1 minute'
     from sessions s cross join generate_series(1, $2::int) g where s.tenant_id = $1`,
    [otherTenant, HISTORY_PER_SESSION],
  );
  await pool.query('analyze compactions; analyze deferred_compactions');
  return async () => {
    await pool.query(`delete from compactions where id like 'cmp_plan_%'`);
    await pool.query('delete from deferred_compactions where tenant_id = $1', [otherTenant]);
  };
}

/** Records the statements of a compaction's reads and requests; leaves the tables as it found them. */
export async function recordCompactionPaths(
  pool: pg.Pool,
  db: Db,
  recorder: QueryRecorder,
  sessions: { raw: number; compacted: number; tenant: string; otherTenant: string; messages: number },
): Promise<RecordedPath[]> {
  const paths: RecordedPath[] = [];
  const record = pathRecorder(recorder, paths);
  const undo = await crowdOtherTenant(pool, sessions.otherTenant, 19);
  try {
    const { raw, compacted, tenant, messages } = sessions;
    await record('selectViewWindow: the newest 500 of a never-compacted 100k session', () =>
      selectViewWindow(db, raw, { pinSystemMessages: true, order: 'desc', limit: WINDOW }),
    );
    await record('selectViewWindow: 500 from the middle, forward, without tool outputs', () =>
      selectViewWindow(db, raw, {
        pinSystemMessages: true,
        order: 'asc',
        afterSeq: messages / 2,
        limit: WINDOW,
        outputs: false,
      }),
    );
    await record('selectViewWindow: 500 from the middle, forward, with tool outputs', () =>
      selectViewWindow(db, raw, {
        pinSystemMessages: true,
        order: 'asc',
        afterSeq: messages / 2,
        limit: WINDOW,
      }),
    );
    await record('selectViewHead: summaries and pinned system messages (compacted 100k)', () =>
      selectViewHead(db, compacted, { pinSystemMessages: true, throughSeq: messages + 1 }),
    );
    const id = `cmp_plan_request_${Date.now()}`;
    const request = await record('insertCompactionWithOutbox: a request and its tenant rank', () =>
      insertCompactionWithOutbox(
        db,
        { id, sessionPk: raw, reason: 'manual', strategy: 'summarize' },
        'compact',
      ),
    );
    // Re-run as it first ran: without its own rows.
    request.setup = () => [
      { text: 'delete from outbox where job_id = $1', values: [id] },
      { text: 'delete from compactions where id = $1', values: [id] },
    ];
    await record('countActiveCompactionsOfTenant: the cap, counted up to 20', () =>
      countActiveCompactionsOfTenant(db, tenant, 20),
    );
    await record('compactionSince: whether a deferred entry is still needed', () =>
      compactionSince(db, raw, new Date(Date.now() - 60_000)),
    );
    await pool.query('delete from outbox where job_id = $1', [id]);
    await pool.query('delete from compactions where id = $1', [id]);
    const defer = await record('deferCompaction: an auto compaction waits for room', () =>
      deferCompaction(db, { sessionPk: raw, tenantId: tenant, reason: 'auto', maxActive: 20 }),
    );
    defer.setup = () => [{ text: 'delete from deferred_compactions where session_pk = $1', values: [raw] }];
    await record("oldestDeferredCompaction: the tenant's longest waiting", () =>
      oldestDeferredCompaction(db, tenant),
    );
    await record("tenantsWithDeferredCompactions: the reconciler's sweep", () =>
      tenantsWithDeferredCompactions(db, 100),
    );
    await pool.query('delete from deferred_compactions where session_pk = $1', [raw]);
  } finally {
    await undo();
  }
  return paths;
}
