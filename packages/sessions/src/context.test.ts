/**
 * sessionContext on a real database, without the API or workers: which fit serves a view over
 * `usable`, the prepared draft's view, `fit: 'none'`, and the bounded wait for a compaction.
 */
import { describe, expect, it } from 'vitest';
import { READ_FIT_MARKER_METADATA_TYPE, type Message, type PolicyInput } from '@compactor/core';
import { insertCompaction, prepareMessages, type MessageInput, type SessionRow } from '@compactor/db';
import { appendTestMessages, insertTestSession, useTestDatabase } from '@compactor/db/testing';
import type { SessionEventSource } from '@compactor/queue';
import { preparedSettingsKey, type SessionEvent } from '@compactor/workflow';
import { getTokenizer } from '@compactor/tokenizer';
import { sessionContext, type ContextRequest } from './context';
import { statusSnapshot } from './status';

const database = useTestDatabase();
const tokenizer = getTokenizer('o200k_base');

/** Session events a test sends by hand. */
function handEvents() {
  const listeners = new Set<(event: SessionEvent) => void>();
  const source: SessionEventSource = {
    subscribe: async (_pk, listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    since: async () => [],
    close: async () => undefined,
  };
  return {
    source,
    emit: (event: SessionEvent) => listeners.forEach((listener) => listener(event)),
    listeners,
  };
}

const events = handEvents();
const resources = () => ({ db: database.db, tokenizerFor: () => tokenizer, events: events.source });
const GOAL = 'Port the ledger to the invoices API. Never touch the production database.';

/** A 4,000-token window with 4,000 of output: usable 3,000. No automatic compaction. */
async function sessionWith(turns: number, policy: PolicyInput = {}): Promise<SessionRow> {
  const session = await insertTestSession(database.db, {
    tenantId: 'tenant-a',
    contextWindow: 4_000,
    policy: { auto: false, ...policy },
  });
  const messages: MessageInput[] = [];
  for (let turn = 1; turn <= turns; turn++) {
    messages.push(
      {
        role: 'user',
        parts: [{ type: 'text', text: turn === 1 ? GOAL : `Request ${turn}: the next module.` }],
      },
      {
        role: 'assistant',
        finish: 'tool-calls',
        parts: [
          {
            type: 'tool',
            callId: `call_${turn}`,
            tool: 'bash',
            status: 'completed',
            input: { command: `npm test ledger-${turn}` },
            output: Array.from({ length: 60 }, (_, i) => `PASS ledger-${turn}/case-${i}.test.ts`).join('\n'),
          },
        ],
      },
      { role: 'assistant', finish: 'stop', parts: [{ type: 'text', text: `Module ${turn} is ported.` }] },
    );
  }
  await appendTestMessages(database.db, session.pk, await prepareMessages(messages, tokenizer, new Date()));
  return session;
}

const read = (session: SessionRow, request: Partial<ContextRequest> = {}) =>
  sessionContext(
    resources(),
    { tenantId: 'tenant-a', id: session.id },
    { format: 'native', fit: 'auto', ...request },
  );
const texts = (messages: unknown[]) => JSON.stringify(messages);

describe('sessionContext', () => {
  it('serves a view within usable as it is: fit view', async () => {
    const session = await sessionWith(1);
    const context = await read(session);
    expect(context).toMatchObject({ fit: 'view', usable: 3_000, activeCompaction: null, compactionId: null });
    expect(context.messages).toHaveLength(3);
  });

  it('fits a view over usable at read time (interim), and serves it raw with fit none', async () => {
    const session = await sessionWith(8);
    const raw = await read(session, { fit: 'none' });
    expect(raw.fit).toBe('over');
    expect(raw.tokens).toBeGreaterThan(3_000);
    expect(raw.messages).toHaveLength(24);

    const fitted = await read(session);
    expect(fitted.fit).toBe('interim');
    expect(fitted.tokens).toBeLessThanOrEqual(3_000);
    const marker = (fitted.messages as Message[]).find(
      (m) => m.metadata['type'] === READ_FIT_MARKER_METADATA_TYPE,
    );
    expect(marker).toBeDefined();
    expect(texts(fitted.messages)).toContain(GOAL);
    expect(texts(fitted.messages)).toContain('Request 8: the next module.');
    // The same view reads the same, byte for byte.
    expect(await read(session)).toEqual(fitted);
    // As Chat Completions too.
    const openai = await read(session, { format: 'openai' });
    expect(openai.fit).toBe('interim');
    expect(openai.tokens).toBe(fitted.tokens);
  });

  it('leaves room for the overhead the usage reports measured on top of the stored counts', async () => {
    const session = await sessionWith(8);
    // The provider saw 400 tokens more than the store holds (tool schemas, framing).
    const stored = (await statusSnapshot(database.db, session)).stats.storedTokens;
    const report: MessageInput = {
      role: 'assistant',
      finish: 'stop',
      parts: [{ type: 'text', text: 'Done.' }],
      usage: { input: stored + 400, output: 10, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
    };
    await appendTestMessages(database.db, session.pk, await prepareMessages([report], tokenizer, new Date()));
    const { status, stats } = await statusSnapshot(database.db, session);
    const overhead = status.tokens - stats.storedTokens;
    expect(overhead).toBeGreaterThan(0);
    const fitted = await read(session);
    expect(fitted.fit).toBe('interim');
    expect(fitted.tokens).toBeLessThanOrEqual(3_000 - overhead);
  });

  describe('with a ready prepared draft', () => {
    async function withDraft(session: SessionRow, cutSeq: number, settingsKey?: string): Promise<void> {
      const outcome = {
        version: 2,
        outcome: {
          kind: 'summary',
          summaryText: `The first modules are ported. Goal: ${GOAL}`,
          boundarySeq: cutSeq,
          messagesCompacted: cutSeq - 1,
          fileOps: { readFiles: [], modifiedFiles: [] },
          writtenBy: 'llm',
          llm: null,
          fallback: null,
          clamps: [],
          detail: {},
        },
      };
      await database.db.$client.query(
        `insert into prepared_summaries (session_pk, id, status, base_compaction_id, settings_key, covers_through_seq, cut_seq, outcome, prepared_at)
         values ($1, 'draft_1', 'ready', null, $2, $3, $4, $5, now())`,
        [session.pk, settingsKey ?? preparedSettingsKey(session), cutSeq, cutSeq, JSON.stringify(outcome)],
      );
    }

    it('serves the draft in place of what it covers: fit prepared', async () => {
      const session = await sessionWith(8, { prepare: { atRatio: 0.5 } });
      // The draft covers turns 1–5 (15 messages) and keeps turns 6–8 from seq 16.
      await withDraft(session, 16);
      const context = await read(session);
      expect(context.fit).toBe('prepared');
      expect(context.tokens).toBeLessThanOrEqual(3_000);
      const messages = context.messages as Message[];
      // The OpenCode-style request marker and summary, then everything from the cut on.
      expect(messages.slice(0, 2).map((m) => m.summary)).toEqual([true, true]);
      expect(texts(messages.slice(0, 2))).toContain('The first modules are ported.');
      expect(messages.slice(2).map((m) => m.seq)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24]);
    });

    it('does not serve a draft written under other settings: fit interim', async () => {
      const session = await sessionWith(8, { prepare: { atRatio: 0.5 } });
      await withDraft(session, 16, 'another-policy');
      expect((await read(session)).fit).toBe('interim');
    });
  });

  describe('wait', () => {
    async function activeCompaction(session: SessionRow, id: string) {
      await insertCompaction(database.db, {
        id,
        sessionPk: session.pk,
        reason: 'manual',
        strategy: 'summarize',
        status: 'running',
      });
    }
    const end = (id: string) =>
      database.db.$client.query(
        `update compactions set status = 'failed', finished_at = now() where id = $1`,
        [id],
      );

    it('waits for the active compaction to end, woken by the session events', async () => {
      const session = await sessionWith(8);
      await activeCompaction(session, 'cmp_wait_1');
      const reading = read(session, { waitMs: 30_000 });
      await expect.poll(() => events.listeners.size).toBe(1);
      await end('cmp_wait_1');
      events.emit({ type: 'compaction.failed' } as SessionEvent);
      const context = await reading;
      expect(context.activeCompaction).toBeNull();
      expect(context.fit).toBe('interim');
      expect(events.listeners.size).toBe(0);
    });

    it('gives up after waitMs and fits the view anyway, the compaction still active', async () => {
      const session = await sessionWith(8);
      await activeCompaction(session, 'cmp_wait_2');
      const context = await read(session, { waitMs: 200 });
      expect(context.fit).toBe('interim');
      expect(context.activeCompaction).toMatchObject({ id: 'cmp_wait_2', status: 'running' });
      expect(context.tokens).toBeLessThanOrEqual(3_000);
      expect(events.listeners.size).toBe(0);
      await end('cmp_wait_2');
    });
  });
});
