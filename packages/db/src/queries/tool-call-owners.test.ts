/** findToolCallOwners: the newest message holding each call, with what a result's write needs of the call. */
import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { findToolCallOwners } from './tool-call-owners';
import { namedSessionChainMatch } from './conversation-links';

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

  it("read with a header's session lookup (namedSessionChainMatch's ownersOf): the same owners, none for a session that does not exist", async () => {
    const session = await createTestSession(t.db, 'tenant-owners');
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_a', null, { input: { path: 'a.ts' } })], { id: 'm1' }),
      newMessage('assistant', [tool('call_b', 'done')], { id: 'm2' }),
    ]);
    const hashes = [Buffer.alloc(32, 7)];
    const ids = ['call_a', 'call_b', 'call_z'];
    const {
      session: named,
      match,
      owners,
    } = await namedSessionChainMatch(t.db, 'tenant-owners', session.id, hashes, ids);
    expect(named?.pk).toBe(session.pk);
    expect(match).toBeNull();
    expect(owners).toEqual(await findToolCallOwners(t.db, session.pk, ids));
    expect([...owners.keys()].sort()).toEqual(['call_a', 'call_b']);
    const missing = await namedSessionChainMatch(t.db, 'tenant-owners', 'no-such-session', hashes, ids);
    expect(missing.session).toBeNull();
    expect(missing.owners.size).toBe(0);
    // Another tenant's session of the same id is not read.
    const other = await namedSessionChainMatch(t.db, 'tenant-other', session.id, hashes, ids);
    expect(other.owners.size).toBe(0);
  });
});
