import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { loadContextRows, prepareMessages, type MessageInput, type SessionRow } from '@compactor/db';
import { assembleContext, type AssembledContext, type Message, type PolicyInput } from '@compactor/core';
import { createLlm } from '@compactor/llm';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { appendTestMessages, insertTestSession, useTestDatabase } from '@compactor/db/testing';
import { getTokenizer } from '@compactor/tokenizer';
import { silentLog, type WorkflowResources } from '../resources';
import type { SessionEvent } from '../session-events';
import { contractCheckedEvents } from './checked-events';

export { contractCheckedEvents, contractIssue } from './checked-events';

export interface WorkflowHarness {
  /** Publishes events to {@link published}, each checked against the contract after every test. */
  readonly resources: WorkflowResources;
  /** The events the default resources published during the current test, in order. */
  readonly published: readonly SessionEvent[];
  readonly stub: LlmStub;
  /** The session's context view as the API serves it (core-assembled from the SQL filter). */
  context(sessionPk: number): Promise<AssembledContext>;
  /** A session with these messages stored exactly as the API would store them. */
  seedSession(
    messages: MessageInput[],
    options?: { policy?: PolicyInput; contextWindow?: number; tenantId?: string },
  ): Promise<SessionRow>;
  append(session: SessionRow, messages: MessageInput[]): Promise<void>;
  /** A tool part as stored (the raw history's version, never clamped or pruned). */
  rawPart(sessionPk: number, callId: string): Promise<{ output: string | null } | null>;
}

/** This file's own database, the LLM stub over HTTP, and the real client. Top level of a test file. */
export function useWorkflow(): WorkflowHarness {
  const database = useTestDatabase();
  let stub: LlmStub | undefined;
  let resources: WorkflowResources | undefined;
  const counter = getTokenizer('o200k_base');
  // Every test's producers are held to the wire contract: an event it does not type fails the test.
  let events = contractCheckedEvents();

  beforeAll(async () => {
    stub = await startLlmStub();
    resources = {
      db: database.db,
      llm: createLlm({ apiKey: 'stub', baseURL: stub.url, timeoutMs: 10_000 }),
      clock: () => new Date(),
      log: silentLog,
      events: { publish: (event) => events.publish(event) },
    };
  });
  afterEach(() => {
    const { issues } = events;
    events = contractCheckedEvents();
    expect(issues, 'events the contract does not type').toEqual([]);
  });
  afterAll(async () => {
    await stub?.close();
  });

  const append = async (session: SessionRow, messages: MessageInput[]) => {
    await appendTestMessages(database.db, session.pk, await prepareMessages(messages, counter, new Date()));
  };

  return {
    get resources() {
      if (!resources) throw new Error('useWorkflow(): only inside tests and hooks');
      return resources;
    },
    get published() {
      return events.published;
    },
    get stub() {
      if (!stub) throw new Error('useWorkflow(): only inside tests and hooks');
      return stub;
    },
    append,
    async context(sessionPk) {
      const rows = await loadContextRows(database.db, sessionPk);
      return assembleContext(rows.messages, rows.compaction ? [rows.compaction] : []);
    },
    async rawPart(sessionPk, callId) {
      const { rows } = await database.db.$client.query<{ output: string | null }>(
        'select tool_output as output from parts where session_pk = $1 and call_id = $2',
        [sessionPk, callId],
      );
      return rows[0] ?? null;
    },
    async seedSession(messages, options = {}) {
      const session = await insertTestSession(database.db, { tenantId: 'tenant-a', ...options });
      await append(session, messages);
      return session;
    },
  };
}

/** The text of a message's text parts, joined. */
export const textOf = (message: Message | undefined): string =>
  (message?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');
