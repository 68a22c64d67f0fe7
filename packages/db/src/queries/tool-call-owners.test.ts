/** findToolCallOwners: the newest message holding each call, with what a result's write needs of the call. */
import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { findToolCallOwners } from './tool-call-owners';

const t = useTestDatabase();

describe('findToolCallOwners', () => {
  it("answers each call's newest owner with its tool, status and stored input; unknown ids are absent", async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_1', 'old', { input: { path: 'old.ts' } })], { id: 'm1' }),
      newMessage('assistant', [tool('call_1', null, { input: { path: 'new.ts', lines: [1, 2] } })], {
        id: 'm2',
      }),
      newMessage('assistant', [tool('call_2', null, { tool: 'grep', input: {} })], { id: 'm3' }),
    ]);
    const owners = await findToolCallOwners(t.db, session.pk, ['call_1', 'call_2', 'call_9']);
    expect(Object.fromEntries(owners)).toEqual({
      call_1: {
        callId: 'call_1',
        messageId: 'm2',
        tool: 'read',
        status: 'running',
        input: { path: 'new.ts', lines: [1, 2] },
      },
      call_2: { callId: 'call_2', messageId: 'm3', tool: 'grep', status: 'running', input: {} },
    });
  });
});
