/** The orphan collector against real Postgres: what no part refers to goes, what one does stays. */
import type { FilePart } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { applyRetentionPurge } from '../operations/purge-retention';
import { loadHistoryPage } from '../operations/load-messages';
import { deleteSession } from '../queries/sessions';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { mediaReference, type MediaObjectInput } from './references';
import { countOrphanMedia, deleteOrphanMedia } from './orphans';
import { storeMediaObjects } from './store';

const t = useTestDatabase();

const object = (byte: number): MediaObjectInput => ({
  sha256: byte.toString(16).padStart(2, '0').repeat(32),
  mime: 'image/png',
  data: new Uint8Array(100 + byte).fill(byte),
  width: 8,
  height: 8,
  pages: null,
});

const filePart = (o: MediaObjectInput, callId?: string): FilePart => ({
  type: 'file',
  mime: o.mime,
  filename: null,
  url: mediaReference(o),
  tokens: 85,
  ...(callId ? { callId } : {}),
});

async function heldHashes(tenantId: string): Promise<string[]> {
  const { rows } = await t.database.pool.query<{ sha256: string }>(
    'select sha256 from media_objects where tenant_id = $1 order by sha256',
    [tenantId],
  );
  return rows.map((row) => row.sha256);
}

/** Ages the tenant's objects past any grace, as if stored a day ago. */
async function age(tenantId: string): Promise<void> {
  await t.database.pool.query(
    `update media_objects set stored_at = now() - interval '1 day' where tenant_id = $1`,
    [tenantId],
  );
}

const soon = () => new Date(Date.now() + 60_000);

describe('orphaned media objects', () => {
  it("keeps a tool result's file with its call, and reads it back naming the call", async () => {
    const session = await createTestSession(t.db, 'tenant-calls');
    await storeMediaObjects(t.db, 'tenant-calls', [object(7)]);
    await appendTestMessages(t.db, session.pk, [
      newMessage('assistant', [tool('call_7', 'shot'), filePart(object(7), 'call_7')], { id: 'turn' }),
    ]);
    const page = await loadHistoryPage(t.db, session.pk, { afterSeq: 0, limit: 10 });
    expect(page.messages[0]!.parts[1]).toEqual(filePart(object(7), 'call_7'));
  });

  it("removes in batches what no session of the tenant refers to, never another tenant's", async () => {
    const tenant = 'tenant-gc';
    const kept = await createTestSession(t.db, tenant);
    const deleted = await createTestSession(t.db, tenant);
    const objects = [1, 2, 3, 4, 5].map(object);
    await storeMediaObjects(t.db, tenant, objects);
    await storeMediaObjects(t.db, 'tenant-gc-other', [object(1), object(2)]);
    // Object 1 is referenced by both sessions, 2 and 3 by the deleted one only, 4 by a tool result kept, 5 by none.
    await appendTestMessages(t.db, kept.pk, [
      newMessage('user', [text('see'), filePart(objects[0]!)]),
      newMessage('assistant', [tool('call_4', 'shot'), filePart(objects[3]!, 'call_4')]),
    ]);
    await appendTestMessages(t.db, deleted.pk, [
      newMessage('user', [filePart(objects[0]!), filePart(objects[1]!), filePart(objects[2]!)]),
    ]);
    expect(await deleteSession(t.db, deleted.pk)).toBe(true);

    // Within the grace nothing goes: each may be about to be referred to.
    expect(
      await deleteOrphanMedia(t.db, { tenantId: tenant, storedBefore: new Date(Date.now() - 3_600_000) }),
    ).toEqual({ objects: 0, bytes: 0 });
    await age(tenant);
    await age('tenant-gc-other');
    const scope = { tenantId: tenant, storedBefore: new Date() };
    expect(await countOrphanMedia(t.db, scope)).toEqual({ objects: 3, bytes: 102 + 103 + 105 });
    const batches: number[] = [];
    const report = await deleteOrphanMedia(t.db, scope, {
      batchSize: 2,
      onBatch: (b) => batches.push(b.objects),
    });
    expect(report).toEqual({ objects: 3, bytes: 102 + 103 + 105 });
    // Five objects walked two at a time: no batch removed more than two.
    expect(Math.max(...batches)).toBeLessThanOrEqual(2);
    expect(await heldHashes(tenant)).toEqual([objects[0]!.sha256, objects[3]!.sha256]);
    // The other tenant's copies are its own: nothing of tenant-gc's refers to them, and they stay.
    expect(await heldHashes('tenant-gc-other')).toEqual([object(1).sha256, object(2).sha256]);
    expect(await countOrphanMedia(t.db, scope)).toEqual({ objects: 0, bytes: 0 });
  });

  it('spares an object posted again: storing it stamps it, whatever its age', async () => {
    const tenant = 'tenant-gc-repost';
    await storeMediaObjects(t.db, tenant, [object(9)]);
    await age(tenant);
    expect(await storeMediaObjects(t.db, tenant, [object(9)])).toBe(0);
    const scope = { tenantId: tenant, storedBefore: new Date(Date.now() - 60_000) };
    expect(await deleteOrphanMedia(t.db, scope)).toEqual({ objects: 0, bytes: 0 });
    expect(await heldHashes(tenant)).toEqual([object(9).sha256]);
  });

  it('removes what the retention purge left unreferenced', async () => {
    const tenant = 'tenant-gc-purge';
    const session = await createTestSession(t.db, tenant);
    await storeMediaObjects(t.db, tenant, [object(6)]);
    await appendTestMessages(t.db, session.pk, [newMessage('user', [filePart(object(6))], { id: 'old' })]);
    await age(tenant);
    // Referred to by a message in the view: the purge leaves it, and so does the collector.
    await applyRetentionPurge(t.db, { tenantId: tenant, createdBefore: soon() });
    expect(await deleteOrphanMedia(t.db, { tenantId: tenant, storedBefore: new Date() })).toEqual({
      objects: 0,
      bytes: 0,
    });
    // Its part's URL cleared (as a purge of a superseded message does): the object is an orphan.
    await t.database.pool.query(
      `update parts set url = null, purged_at = now() where session_pk = $1 and type = 'file'`,
      [session.pk],
    );
    expect(await deleteOrphanMedia(t.db, { tenantId: tenant, storedBefore: new Date() })).toEqual({
      objects: 1,
      bytes: 106,
    });
  });
});
