/** Seeding sessions and requesting compactions the way the API does. */
import type { PolicyInput } from '@compactor/core';
import { prepareMessages, type Db, type MessageInput, type SessionRow } from '@compactor/db';
import { noEvents, silentLog } from '@compactor/workflow';
import {
  closeRedis,
  createJobQueues,
  createRedis,
  type DispatchDeps,
  type JobPolicy,
  type JobQueues,
} from '@compactor/queue';
import { appendTestMessages, insertTestSession } from '@compactor/db/testing';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { getTokenizer } from '@compactor/tokenizer';

/** What the API process holds to request compactions: the database and the queues. */
export interface Requester {
  deps: DispatchDeps;
  queues: JobQueues;
  /** Removes this prefix's queues from Redis and closes the connections. */
  close(options?: { obliterate?: boolean }): Promise<void>;
}

export function createRequester(db: Db, redisUrl: string, prefix: string, policy: JobPolicy): Requester {
  const connection = createRedis(redisUrl, { maxRetriesPerRequest: null });
  connection.on('error', () => undefined);
  const queues = createJobQueues({ connection, prefix, policy });
  return {
    queues,
    deps: { db, queues, events: noEvents, log: silentLog, clock: () => new Date() },
    async close({ obliterate = true } = {}) {
      if (obliterate) {
        for (const name of ['compact', 'prune', 'prepare'] as const) {
          await queues
            .queue(name)
            .obliterate({ force: true })
            .catch(() => undefined);
        }
      }
      await queues.close();
      await closeRedis(connection);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------------------------

const counter = getTokenizer('o200k_base');

/** A session stored exactly as the API stores one (like the test support of packages/workflow). */
export async function seedSession(
  db: Db,
  messages: MessageInput[],
  options: { policy?: PolicyInput; contextWindow?: number } = {},
): Promise<SessionRow> {
  const session = await insertTestSession(db, { tenantId: 'tenant-rel', ...options });
  await appendTo(db, session, messages);
  return session;
}

/** `count` coding sessions of 3–4 turns (alternating), generated from seeds `firstSeed`, `firstSeed + 1`, … */
export async function seedCodingSessions(
  db: Db,
  count: number,
  options: { firstSeed: number; policy?: PolicyInput },
): Promise<SessionRow[]> {
  const sessions: SessionRow[] = [];
  for (let i = 0; i < count; i++) {
    sessions.push(
      await seedSession(db, generateCodingSession({ turns: 3 + (i % 2), seed: options.firstSeed + i }), {
        policy: options.policy,
      }),
    );
  }
  return sessions;
}

export async function appendTo(db: Db, session: SessionRow, messages: MessageInput[]): Promise<void> {
  await appendTestMessages(db, session.pk, await prepareMessages(messages, counter, new Date()));
}

/** A follow-up exchange to append while a compaction runs (user asks, assistant answers). */
export function followUp(tag: string): MessageInput[] {
  return [
    {
      id: `${tag}-u`,
      role: 'user',
      parts: [{ type: 'text', text: `Follow-up ${tag}: also log the export duration.` }],
    },
    {
      id: `${tag}-a`,
      role: 'assistant',
      finish: 'stop',
      parts: [{ type: 'text', text: `Done (${tag}): the exporter logs its duration in milliseconds.` }],
    },
  ];
}
