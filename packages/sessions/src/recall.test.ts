/**
 * Recall at the package's boundary: a call's stored output by its id, the refusals when it is
 * unknown, purged by retention or in another tenant's session, and a query that names nothing.
 */
import { describe, expect, it } from 'vitest';
import { CallNotFound, CallOutputPurged, InvalidInput, SessionNotFound } from './errors';
import { recall } from './recall';
import { newSession, parsedMessages, useTestSessions } from './test-support/session-resources';

const t = useTestSessions();
const target = { tenantId: 'tenant-a', id: 'r-calls' };
const read = (callId: string, tenantId = 'tenant-a') =>
  recall(t.database.db, { ...target, tenantId }, { callId });

describe('recall', () => {
  it('gives back a call by id, and refuses what it cannot give', async () => {
    await newSession(t, 'tenant-a', 'r-calls');
    const call = (callId: string, output: string) => ({
      type: 'tool',
      callId,
      tool: 'read',
      status: 'completed',
      input: { path: `${callId}.ts` },
      output,
    });
    await t.messages.append(
      target,
      parsedMessages([
        { role: 'user', parts: [{ type: 'text', text: 'read both files' }] },
        {
          role: 'assistant',
          finish: 'stop',
          parts: [call('kept', 'export const a = 1;'), call('gone', 'secret')],
        },
      ]),
      t.log,
    );
    expect(await read('kept')).toMatchObject({
      kind: 'call',
      callId: 'kept',
      tool: 'read',
      output: 'export const a = 1;',
      seq: 2,
      prunedAt: null,
    });

    await expect(read('never-made')).rejects.toBeInstanceOf(CallNotFound);
    await expect(read('kept', 'tenant-b')).rejects.toBeInstanceOf(SessionNotFound);

    // The retention purge cleared this one: what it was is gone, and when is said.
    const purgedAt = new Date('2026-06-01T00:00:00.000Z');
    await t.database.db.$client.query(
      `update parts set tool_output = null, purged_at = $1 where call_id = 'gone'`,
      [purgedAt],
    );
    const purged = await read('gone').catch((error: unknown) => error);
    expect(purged).toBeInstanceOf(CallOutputPurged);
    expect((purged as CallOutputPurged).purgedAt.toISOString()).toBe(purgedAt.toISOString());

    await expect(recall(t.database.db, target, {})).rejects.toBeInstanceOf(InvalidInput);
  });
});
