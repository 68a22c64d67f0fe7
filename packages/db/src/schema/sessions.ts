import type { CacheBehaviour, ModelPricing } from '@compactor/core';
import { sql } from 'drizzle-orm';
import { bigint, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

/**
 * One agent conversation. `pk` is internal (joins stay narrow); `(tenant_id, id)` is the public
 * identity, because clients may choose ids and two tenants may choose the same one.
 */
export const sessions = pgTable(
  'sessions',
  {
    pk: bigint('pk', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    tenantId: text('tenant_id').notNull(),
    id: text('id').notNull(),
    modelId: text('model_id').notNull(),
    provider: text('provider').notNull(),
    contextWindow: integer('context_window').notNull(),
    maxOutputTokens: integer('max_output_tokens').notNull(),
    inputLimit: integer('input_limit'),
    /**
     * The client's prompt-cache overrides (`model.pricing`, `model.cache`) as stated; null keeps
     * the model catalog's. Resolved on use (core `resolveCacheModel`) so the catalog can evolve.
     */
    modelPricing: jsonb('model_pricing').$type<ModelPricing>(),
    modelCache: jsonb('model_cache').$type<CacheBehaviour>(),
    /** The client's policy input (preset + overrides), resolved on use so defaults can evolve. */
    policy: jsonb('policy')
      .notNull()
      .default(sql`'{}'::jsonb`),
    metadata: jsonb('metadata')
      .notNull()
      .default(sql`'{}'::jsonb`),
    /** Hash of the create request: the same id re-posted with another body is a conflict. */
    createHash: text('create_hash').notNull(),
    /** Highest seq handed out; appends bump it under the row lock, which serialises them. */
    lastSeq: integer('last_seq').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    // Public lookup by (tenant, id) on every request; also enforces per-tenant id uniqueness.
    uniqueIndex('sessions_tenant_id_uq').on(t.tenantId, t.id),
  ],
);
