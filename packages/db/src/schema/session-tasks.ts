import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { sessions } from './sessions';

/**
 * A session's sub-agents and background tasks (core tasks/): one row per task call, written on
 * the call's append and on the PATCH that reports its status or result (migration 0025). Bounded
 * text only: `asked` and `outcome` are excerpts; the call stays whole in `parts`.
 */
export const sessionTasks = pgTable(
  'session_tasks',
  {
    sessionPk: bigint('session_pk', { mode: 'number' })
      .notNull()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    tenantId: text('tenant_id').notNull(),
    callId: text('call_id').notNull(),
    messageId: text('message_id').notNull(),
    seq: integer('seq').notNull(),
    tool: text('tool').notNull(),
    status: text('status', { enum: ['pending', 'running', 'completed', 'error'] }).notNull(),
    asked: text('asked').notNull(),
    dedupeKey: text('dedupe_key').notNull(),
    outcome: text('outcome'),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
    /** The seq of the message that delivered a result landing after its call was compacted. */
    deliveredSeq: integer('delivered_seq'),
  },
  (t) => [
    primaryKey({ name: 'session_tasks_pk', columns: [t.sessionPk, t.callId] }),
    index('session_tasks_running_idx')
      .on(t.sessionPk, t.startedAt, t.callId)
      .where(sql`${t.status} in ('pending', 'running')`),
    index('session_tasks_finished_idx')
      .on(t.sessionPk, t.finishedAt.desc(), t.callId)
      .where(sql`${t.status} in ('completed', 'error')`),
    index('session_tasks_session_seq_idx').on(t.sessionPk, t.seq.desc(), t.callId),
  ],
);
