import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';
import { sessions } from './sessions';

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * The drop-in endpoints' hash chain: one row per client message of a session (and per answer the
 * upstream gave), holding the chain hash of the conversation up to and including it. A request
 * that resends its whole history finds its session as the longest stored prefix of its own chain.
 */
export const conversationLinks = pgTable(
  'conversation_links',
  {
    sessionPk: bigint('session_pk', { mode: 'number' })
      .notNull()
      .references(() => sessions.pk, { onDelete: 'cascade' }),
    /** Index of the element in the client's message list (0 = its first message). */
    position: integer('position').notNull(),
    /** The session's tenant, copied: lookups never leave the tenant and never join `sessions`. */
    tenantId: text('tenant_id').notNull(),
    /** sha256 over the previous link's hash and this element's canonical JSON. */
    chainHash: bytea('chain_hash').notNull(),
    /** The `X-Compactor-Session` the conversation was started under (shared by its forks), or null. */
    conversationKey: text('conversation_key'),
    /** The message the element was stored as; null for an element of tool results only. */
    messageId: text('message_id'),
    /** The element is an answer Compactor stored from the upstream (the client echoes it next). */
    answer: boolean('answer').notNull().default(false),
    /** That answer as the provider sent it, for an identical retry; cleared once the chain moves on. */
    rawAnswer: jsonb('raw_answer'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    // The session's chain in order: its newest link is one backward step of this key.
    primaryKey({ columns: [t.sessionPk, t.position] }),
    // The chain lookup without a session header: one probe per request hash, the newest session
    // holding it first (session_pk), so a prefix shared by many sessions still reads one entry.
    index('conversation_links_tenant_hash_idx').on(t.tenantId, t.chainHash, t.sessionPk),
    // The same under a session header: only that conversation's sessions (the first and its forks).
    index('conversation_links_key_hash_idx')
      .on(t.tenantId, t.conversationKey, t.chainHash, t.sessionPk)
      .where(sql`${t.conversationKey} is not null`),
  ],
);
