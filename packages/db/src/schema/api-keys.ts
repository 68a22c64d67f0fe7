import { pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

/** Bearer keys managed by the keys CLI. Only a SHA-256 of the key is stored. */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    name: text('name').notNull(),
    keyHash: text('key_hash').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    // Every authenticated request looks its key up by hash.
    uniqueIndex('api_keys_hash_uq').on(t.keyHash),
  ],
);
