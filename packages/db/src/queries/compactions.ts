import { and, desc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../client';
import { NotFoundError } from '../errors';
import { executePrepared } from '../prepared';
import type { CompactionRow } from '../mappers';
import { ACTIVE_COMPACTION_STATUSES, compactionJoinKeys, compactions, outbox } from '../schema';
import type { OutboxRow } from './outbox';
import { TENANT_BACKLOG_RANK_LIMIT } from './tenant-compactions';
import { rowMapper, selectList } from './raw-rows';

/** A `compactions` row selected with `selectList(compactions, alias, '')`, as drizzle maps it. */
export const compactionFromRow = rowMapper(compactions, '');

/** A `compactions` row to insert; `status` defaults to `pending`, the tenant is the session's. */
export type NewCompactionRow = Omit<typeof compactions.$inferInsert, 'tenantId'>;

/** The session's tenant, as a compaction row copies it (`tenant_id`). */
const tenantOf = (sessionPk: number) => sql`(select s.tenant_id from sessions s where s.pk = ${sessionPk})`;

/**
 * Inserts a compaction; returns `null` when the session already has an active one (the partial
 * unique index decides, so two racing requests cannot both start one) or the idempotency key
 * was used before.
 */
export async function insertCompaction(db: DbOrTx, row: NewCompactionRow): Promise<CompactionRow | null> {
  const [inserted] = await db
    .insert(compactions)
    .values({ ...row, tenantId: tenantOf(row.sessionPk) })
    .onConflictDoNothing()
    .returning();
  return inserted ?? null;
}

/** The columns a compaction request sets; every other column starts at its default. */
export type CompactionRequestRow = Pick<
  NewCompactionRow,
  | 'id'
  | 'sessionPk'
  | 'reason'
  | 'strategy'
  | 'keepRecentTokens'
  | 'instructions'
  | 'force'
  | 'idempotencyKey'
>;

const outboxFromRow = rowMapper(outbox, 'o_');

/**
 * {@link insertCompaction} and the outbox entry of its job (`{ compactionId }`, the job id being
 * the compaction's) in ONE statement: both rows or neither, without a transaction of four round
 * trips. Null when the insert conflicted (an active compaction, a used idempotency key): the
 * caller finds out which, as after {@link insertCompaction}. The entry's `priority` is the
 * compaction's rank in its tenant's backlog (1 + the tenant's other active compactions, counted
 * up to {@link TENANT_BACKLOG_RANK_LIMIT}), read in the same statement: the queue runs every
 * tenant's first compaction before any tenant's second.
 */
export async function insertCompactionWithOutbox(
  db: DbOrTx,
  row: CompactionRequestRow,
  jobName: string,
): Promise<CompactionWithOutbox | null> {
  return compactionWithOutboxOf(
    await executePrepared<Record<string, unknown>>(db, insertCompactionWithOutboxSql(row, jobName)),
  );
}

/** A requested compaction and the outbox entry of its job. */
export interface CompactionWithOutbox {
  compaction: CompactionRow;
  outbox: OutboxRow;
}

/**
 * The statement of {@link insertCompactionWithOutbox}, for a caller that sends it with others
 * (a completion's follow-up, in the completing transaction); read its result with
 * {@link compactionWithOutboxOf}.
 */
export function insertCompactionWithOutboxSql(row: CompactionRequestRow, jobName: string): SQL {
  return sql`
    with c as (
      insert into compactions (id, session_pk, tenant_id, reason, strategy, keep_recent_tokens, instructions, force, idempotency_key)
      values (${row.id}, ${row.sessionPk}, ${tenantOf(row.sessionPk)}, ${row.reason}, ${row.strategy}, ${row.keepRecentTokens ?? null}::int,
              ${row.instructions ?? null}::text, ${row.force ?? false}, ${row.idempotencyKey ?? null}::text)
      on conflict do nothing
      returning *
    ),
    o as (
      insert into outbox (job_name, job_id, payload, priority)
      select ${jobName}, c.id, jsonb_build_object('compactionId', c.id),
             1 + (select count(*) from (
                    select 1 from compactions a
                    where a.tenant_id = c.tenant_id and a.status in ('pending', 'running')
                    limit ${TENANT_BACKLOG_RANK_LIMIT - 1}
                  ) r)
      from c
      returning *
    )
    select ${selectList(compactions, 'c', '')}, ${selectList(outbox, 'o', 'o_')} from c, o`;
}

/** What {@link insertCompactionWithOutboxSql} returned: null when the insert conflicted. */
export function compactionWithOutboxOf(result: {
  rows: Record<string, unknown>[];
}): CompactionWithOutbox | null {
  const [found] = result.rows;
  return found ? { compaction: compactionFromRow(found), outbox: outboxFromRow(found) } : null;
}

/** A compaction by id, or `null`; not scoped to a session or tenant. */
export async function findCompaction(db: DbOrTx, id: string): Promise<CompactionRow | null> {
  const [row] = await db.select().from(compactions).where(eq(compactions.id, id));
  return row ?? null;
}

/** The session's pending or running compaction, or `null`; a partial unique index allows at most one. */
export async function findActiveCompaction(db: DbOrTx, sessionPk: number): Promise<CompactionRow | null> {
  const [row] = await db
    .select()
    .from(compactions)
    .where(
      and(eq(compactions.sessionPk, sessionPk), inArray(compactions.status, [...ACTIVE_COMPACTION_STATUSES])),
    );
  return row ?? null;
}

/** The compaction that defines the context view now, if any. */
export async function findLatestCompletedCompaction(
  db: DbOrTx,
  sessionPk: number,
): Promise<CompactionRow | null> {
  // Every context read and every compaction's view load: a prepared statement (see executePrepared).
  const { rows } = await executePrepared(
    db,
    sql`select ${selectList(compactions, 'c', '')} from compactions c
        where c.session_pk = ${sessionPk} and c.status = 'completed'
        order by c.finished_at desc, c.requested_at desc limit 1`,
  );
  return rows[0] ? compactionFromRow(rows[0]) : null;
}

/** History, newest first; `before` pages by request time. */
export async function listCompactions(
  db: DbOrTx,
  sessionPk: number,
  { limit, before }: { limit: number; before?: Date | undefined },
): Promise<CompactionRow[]> {
  return db
    .select()
    .from(compactions)
    .where(
      and(eq(compactions.sessionPk, sessionPk), before ? lt(compactions.requestedAt, before) : undefined),
    )
    .orderBy(desc(compactions.requestedAt), desc(compactions.id))
    .limit(limit);
}

/** Columns {@link updateCompaction} may set; the id and the session are fixed. */
export type CompactionPatch = Partial<Omit<NewCompactionRow, 'id' | 'sessionPk'>>;

/** Updates a compaction row unconditionally (tests, and steps that already hold the fence). */
export async function updateCompaction(
  db: DbOrTx,
  id: string,
  patch: CompactionPatch,
): Promise<CompactionRow | null> {
  const [row] = await db.update(compactions).set(patch).where(eq(compactions.id, id)).returning();
  return row ?? null;
}

/** The compaction an earlier request with this `Idempotency-Key` created, if any. */
export async function findCompactionByIdempotencyKey(
  db: DbOrTx,
  sessionPk: number,
  idempotencyKey: string,
): Promise<CompactionRow | null> {
  const [row] = await db
    .select()
    .from(compactions)
    .where(and(eq(compactions.sessionPk, sessionPk), eq(compactions.idempotencyKey, idempotencyKey)));
  return row ?? null;
}

/** An `Idempotency-Key` bound to the compaction its request joined, and what that request asked for. */
export type CompactionJoinKeyRow = typeof compactionJoinKeys.$inferSelect;

/** The compaction an earlier request with this `Idempotency-Key` joined (one was active), if any. */
export async function findCompactionJoinKey(
  db: DbOrTx,
  sessionPk: number,
  idempotencyKey: string,
): Promise<CompactionJoinKeyRow | null> {
  const [row] = await db
    .select()
    .from(compactionJoinKeys)
    .where(
      and(eq(compactionJoinKeys.sessionPk, sessionPk), eq(compactionJoinKeys.idempotencyKey, idempotencyKey)),
    );
  return row ?? null;
}

/**
 * Binds a key to the compaction its request joined, unless a concurrent request bound it first:
 * returns the binding that holds, this one or the earlier one.
 */
export async function bindCompactionJoinKey(
  db: DbOrTx,
  row: Omit<typeof compactionJoinKeys.$inferInsert, 'createdAt'>,
): Promise<CompactionJoinKeyRow> {
  const [inserted] = await db.insert(compactionJoinKeys).values(row).onConflictDoNothing().returning();
  if (inserted) return inserted;
  const existing = await findCompactionJoinKey(db, row.sessionPk, row.idempotencyKey);
  // Only a concurrent delete of the session removes a binding.
  if (!existing) throw new NotFoundError('session not found');
  return existing;
}

/** The compactions a session's status and its auto trigger look at. */
export interface SessionCompactions {
  /** The pending or running one (at most one). */
  active: CompactionRow | null;
  /** The most recently finished one, whatever its outcome. */
  lastFinished: CompactionRow | null;
  /** The one that defines the context view now. */
  latestCompleted: CompactionRow | null;
}

/**
 * The session's active compaction ({@link findActiveCompaction}), its most recently finished one
 * (whatever its outcome) and {@link findLatestCompletedCompaction} in one statement (every append
 * and status read needs all three); each branch is one index probe.
 */
export async function findSessionCompactions(db: DbOrTx, sessionPk: number): Promise<SessionCompactions> {
  const result = await executePrepared<Record<string, unknown>>(db, sessionCompactionsSql(sessionPk, ''));
  return sessionCompactionsFromRows(result.rows, '');
}

/**
 * The statement of {@link findSessionCompactions}: up to three rows, each naming which one it is
 * (`<prefix>which`), columns named `<prefix><column>` (other statements embed it).
 */
export function sessionCompactionsSql(sessionPk: number, prefix: CompactionColumnPrefix): SQL {
  const columns = selectList(compactions, 'c', prefix);
  const which = sql.raw(`"${prefix}which"`);
  return sql`
    (select 'active' as ${which}, ${columns} from compactions c
     where c.session_pk = ${sessionPk} and c.status in ('pending', 'running') limit 1)
    union all
    (select 'lastFinished', ${columns} from compactions c
     where c.session_pk = ${sessionPk} and c.finished_at is not null
     order by c.finished_at desc limit 1)
    union all
    (select 'latestCompleted', ${columns} from compactions c
     where c.session_pk = ${sessionPk} and c.status = 'completed'
     order by c.finished_at desc, c.requested_at desc limit 1)`;
}

/** The column prefixes {@link sessionCompactionsSql} is used with, and their row mappers. */
const PREFIXED_COMPACTION_ROWS = { '': compactionFromRow, c_: rowMapper(compactions, 'c_') };
export type CompactionColumnPrefix = keyof typeof PREFIXED_COMPACTION_ROWS;

/** The compactions of {@link sessionCompactionsSql} rows (rows without a `<prefix>which` are skipped). */
export function sessionCompactionsFromRows(
  rows: Record<string, unknown>[],
  prefix: CompactionColumnPrefix,
): SessionCompactions {
  const toRow = PREFIXED_COMPACTION_ROWS[prefix];
  const found: SessionCompactions = { active: null, lastFinished: null, latestCompleted: null };
  for (const raw of rows) {
    const which = raw[`${prefix}which`] as keyof SessionCompactions | null;
    if (which) found[which] = toRow(raw);
  }
  return found;
}
