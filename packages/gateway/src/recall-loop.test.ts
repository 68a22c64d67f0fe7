/**
 * A model's recall call answered by the gateway, against real Postgres: every form of the tool's
 * arguments reaches the recall route (a call by id, words, a ledger section), and arguments the
 * tool does not take get the clients' own "invalid arguments" text rather than an error.
 */
import { describe, expect, it } from 'vitest';
import { INVALID_RECALL_ARGUMENTS } from '@compactor/client';
import { newSession, useTestSessions } from '@compactor/sessions/testing';
import { answerRecallCall } from './recall-loop';

const t = useTestSessions();

describe('answerRecallCall', () => {
  it('answers a ledger section, a search and an unknown call id; refuses arguments the tool does not take', async () => {
    await newSession(t, 'tenant-r', 'recall-kinds');
    const session = { tenantId: 'tenant-r', id: 'recall-kinds' };
    const db = t.database.db;

    // No compaction yet: the files section is empty, and says so rather than failing.
    const files = await answerRecallCall(db, session, JSON.stringify({ kind: 'files' }));
    expect(files).not.toBe(INVALID_RECALL_ARGUMENTS);
    expect(files.toLowerCase()).toContain('files');

    const search = await answerRecallCall(db, session, JSON.stringify({ query: 'parser' }));
    expect(search).not.toBe(INVALID_RECALL_ARGUMENTS);

    expect(await answerRecallCall(db, session, JSON.stringify({ callId: 'call_gone' }))).toContain(
      'call_gone',
    );
    expect(await answerRecallCall(db, session, JSON.stringify({ kind: 'secrets' }))).toBe(
      INVALID_RECALL_ARGUMENTS,
    );
    expect(await answerRecallCall(db, session, '{not json')).toBe(INVALID_RECALL_ARGUMENTS);
  });
});
