import { bigint, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { sessions } from './sessions';

/**
 * Auto compactions the tenant's cap on active compactions held back, one per session, waiting
 * for the tenant to have room. Written in the transaction that found the tenant at its cap
 * (under the tenant's request lock); deleted in the transaction that starts the compaction, so
 * a crash between the two loses nothing and starts nothing twice.
 */
export const deferredCompactions = pgTable(
  'deferred_compactions',
  {
    /** One entry per session: asking again while one waits keeps its place in the line. */
    sessionPk: bigint('session_pk', { mode: 'number' })
      .primaryKey()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    /** The session's tenant (copied): entries are started per tenant, oldest first. */
    tenantId: text('tenant_id').notNull(),
    reason: text('reason', { enum: ['auto', 'manual', 'overflow'] }).notNull(),
    /**
     * The cap in force when it was deferred: the workers that start it do not read the API's
     * settings, and a newer deferral of the session updates it.
     */
    maxActive: integer('max_active').notNull(),
    deferredAt: timestamp('deferred_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    // A tenant's oldest entry, when one of its compactions ends; the reconciler's tenants.
    index('deferred_compactions_tenant_idx').on(t.tenantId, t.deferredAt),
  ],
);
