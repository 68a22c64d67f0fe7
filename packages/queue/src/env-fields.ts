/**
 * The settings the API and the workers both read from their environment, declared once: where
 * Postgres and Redis are, the queue prefix they must agree on, logging, the tokenizer, and the
 * database bounds (each process picks its own defaults). Packages read no `process.env`: each
 * app's `env.ts` composes these fields into its own schema.
 */
import { z } from 'zod';
import { DEFAULT_QUEUE_PREFIX } from './jobs/catalog';
import { redisUrlSchema } from './redis/connect';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A pino level. */
export const logLevelSchema = z.enum(LOG_LEVELS);

/** The database bounds a process chooses: its pool's floor and default, its statement timeout. */
export interface DatabaseEnvDefaults {
  poolMin: number;
  poolDefault: number;
  statementTimeoutMs: number;
}

/** The fields both processes declare, with `database` the process's own defaults. */
export function sharedEnvFields(database: DatabaseEnvDefaults) {
  return {
    DATABASE_URL: z.url().default('postgres://postgres@127.0.0.1:5432/compactor'),
    /** One server (`redis://`) or a Redis Cluster's seed nodes (`redis-cluster://host:port,host:port`). */
    REDIS_URL: redisUrlSchema.default('redis://127.0.0.1:6379'),
    /**
     * Key prefix of the BullMQ queues and the event channels; the API and every worker must agree
     * on it. Hash-tagged by default, so a queue's keys share one Redis Cluster slot.
     */
    QUEUE_PREFIX: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
      .default(DEFAULT_QUEUE_PREFIX),
    LOG_LEVEL: logLevelSchema.default('info'),
    /** `auto` picks the encoding from the session's model id (o200k_base for unknown models). */
    TOKENIZER_ENCODING: z.enum(['auto', 'o200k_base', 'cl100k_base']).default('auto'),
    /** Postgres connections of the process. */
    DATABASE_POOL_SIZE: z.coerce
      .number()
      .int()
      .min(database.poolMin)
      .max(1_000)
      .default(database.poolDefault),
    /**
     * How long connecting to Postgres, or waiting for a free pooled connection, may take: seconds,
     * not the kernel's minutes.
     */
    DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
    /**
     * The longest statement: Postgres cancels it, and the client gives up 2 s later on its own (a
     * frozen server). 0 disables both.
     */
    DATABASE_STATEMENT_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .default(database.statementTimeoutMs),
  };
}
