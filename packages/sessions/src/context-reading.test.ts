/**
 * A context read that takes the status the caller's own last write read (`appendWithReading`,
 * `finishWithReading`) serves what a read of its own serves, without a second status read or
 * transaction, and reads both again when anything was written in between.
 */
import { describe, expect, it } from 'vitest';
import type { Db } from '@compactor/db';
import { sessionContext, type ContextKnown, type ContextRequest } from './context';
import {
  finishedTurn,
  newSession,
  parsedMessages,
  userText,
  useTestSessions,
} from './test-support/session-resources';

const t = useTestSessions();
const REQUEST: ContextRequest = { format: 'openai', fit: 'auto' };

/** The session's database, counting the transactions opened on it (a status read opens one). */
function countingTransactions(db: Db): { db: Db; transactions: () => number } {
  let opened = 0;
  const counted = new Proxy(db, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (key !== 'transaction' || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        opened += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { db: counted, transactions: () => opened };
}

async function contextOf(id: string, known: ContextKnown = {}) {
  const counting = countingTransactions(t.database.db);
  const answer = await sessionContext(
    { ...t.resources, db: counting.db },
    { tenantId: 'tenant-a', id },
    REQUEST,
    known,
  );
  return { answer, transactions: counting.transactions() };
}

const system = { role: 'system', parts: [{ type: 'text', text: 'You port ledgers. Never drop tables.' }] };
const toolCall = (callId: string) => ({
  id: `a-${callId}`,
  role: 'assistant',
  finish: 'tool-calls',
  parts: [{ type: 'tool', callId, tool: 'read', status: 'pending', input: { path: `src/${callId}.ts` } }],
});

describe('sessionContext with the reading of the caller’s last write', () => {
  it('serves what its own read serves, in one statement and no transaction, after an append', async () => {
    await newSession(t, 'tenant-a', 'r-append');
    const target = { tenantId: 'tenant-a', id: 'r-append' };
    const { reading } = await t.messages.appendWithReading(
      target,
      parsedMessages([system, userText(40), toolCall('c1')]),
      t.log,
    );
    expect(reading).not.toBeNull();
    const reused = await contextOf('r-append', { reading });
    const own = await contextOf('r-append');
    expect(reused.answer).toEqual(own.answer);
    // The unanswered call is rendered with its interrupted result: four messages.
    expect(reused.answer.messages).toHaveLength(4);
    expect(own.transactions).toBe(1);
    expect(reused.transactions).toBe(0);
  });

  it('serves the same after a tool result patched in (finishWithReading)', async () => {
    const session = await newSession(t, 'tenant-a', 'r-finish');
    const target = { tenantId: 'tenant-a', id: 'r-finish' };
    await t.messages.append(target, parsedMessages([userText(30), toolCall('c2')]), t.log);
    const { reading } = await t.messages.finishWithReading(
      target,
      'a-c2',
      {
        parts: [
          {
            type: 'tool',
            callId: 'c2',
            tool: 'read',
            status: 'completed',
            input: { path: 'src/c2.ts' },
            output: 'export const ledger = 1;\n'.repeat(50),
            error: null,
          },
        ],
      },
      t.log,
      session,
    );
    expect(reading).not.toBeNull();
    const reused = await contextOf('r-finish', { reading });
    const own = await contextOf('r-finish');
    expect(reused.answer).toEqual(own.answer);
    expect(JSON.stringify(reused.answer.messages)).toContain('export const ledger = 1;');
    expect(reused.transactions).toBe(0);
  });

  it('reads the status again when another write came after the reading', async () => {
    await newSession(t, 'tenant-a', 'r-stale');
    const target = { tenantId: 'tenant-a', id: 'r-stale' };
    const { reading } = await t.messages.appendWithReading(target, parsedMessages([userText(20)]), t.log);
    await t.messages.append(target, parsedMessages([finishedTurn(60, 'late')]), t.log);
    const stale = await contextOf('r-stale', { reading });
    const own = await contextOf('r-stale');
    expect(stale.answer).toEqual(own.answer);
    expect(stale.answer.messages).toHaveLength(2);
    expect(stale.answer.tokens).toBe(own.answer.tokens);
    expect(stale.transactions).toBe(1);
  });

  it('gives no reading when the append started a compaction (the status it read shows none)', async () => {
    await newSession(t, 'tenant-a', 'r-started');
    const answer = await t.messages.appendWithReading(
      { tenantId: 'tenant-a', id: 'r-started' },
      parsedMessages([userText(6_000), userText(10), finishedTurn(7_500)]),
      t.log,
    );
    expect(answer.answer.compaction).toMatchObject({ reason: 'auto' });
    expect(answer.reading).toBeNull();
  });
});
