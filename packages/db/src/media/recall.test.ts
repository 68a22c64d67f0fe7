/** Recall of a media part by its marker's id against real Postgres: the prefix's edges. */
import type { FilePart } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, tool } from '../test-support/fixtures';
import { useTestDatabase } from '../test-support/test-database';
import { findRecallMedia } from './recall';
import { mediaReference, type MediaObjectInput } from './references';
import { storeMediaObjects } from './store';

const t = useTestDatabase();

/** An object whose hash is `head` followed by `fill` up to 64 hex digits. */
const object = (head: string, fill = '0'): MediaObjectInput => ({
  sha256: head.padEnd(64, fill),
  mime: 'image/png',
  data: new Uint8Array([0x89, head.length]),
  width: 8,
  height: 8,
  pages: null,
});

const filePart = (o: MediaObjectInput, callId?: string): FilePart => ({
  type: 'file',
  mime: o.mime,
  filename: `${o.sha256.slice(0, 4)}.png`,
  url: mediaReference(o),
  tokens: 85,
  ...(callId ? { callId } : {}),
});

describe('findRecallMedia', () => {
  it('finds a part by any prefix of its hash up to the whole, and nothing past the prefix', async () => {
    const tenant = 'tenant-recall-media';
    const session = await createTestSession(t.db, tenant);
    // Neighbours in hash order: 'ab' + 0…, 'ab' + f…, and 'ac' just past every 'ab' prefix.
    const low = object('ab');
    const high = object('ab', 'f');
    const next = object('ac');
    await storeMediaObjects(t.db, tenant, [low, high, next]);
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [filePart(low)], { id: 'm-low' }),
      newMessage('assistant', [tool('call_shot', 'taken'), filePart(high, 'call_shot')], { id: 'm-high' }),
      newMessage('user', [filePart(next)], { id: 'm-next' }),
    ]);

    const found = async (prefix: string) =>
      (await findRecallMedia(t.db, tenant, session.pk, prefix))?.messageId;
    expect(await found(low.sha256)).toBe('m-low');
    expect(await found(high.sha256)).toBe('m-high');
    expect(await found(high.sha256.slice(0, 63))).toBe('m-high');
    // A prefix both 'ab' hashes share: the newer part wins; 'ac' is not under it.
    expect(await found('ab')).toBe('m-high');
    expect(await found('a')).toBe('m-next');
    expect(await found('ac')).toBe('m-next');
    expect(await found('abf')).toBe('m-high');
    expect(await found('ab0')).toBe('m-low');
    expect(await found('ad')).toBeUndefined();
    expect(await found('f')).toBeUndefined();
    // Not lowercase hex, or longer than a hash: never a pattern, never a match.
    for (const bad of ['AB', 'ab%', 'a_', '', low.sha256 + '0']) expect(await found(bad)).toBeUndefined();

    const shot = await findRecallMedia(t.db, tenant, session.pk, high.sha256.slice(0, 16));
    expect(shot).toMatchObject({ sha256: high.sha256, callId: 'call_shot', mime: 'image/png' });
    expect(shot!.data).toEqual(Buffer.from(high.data));
  });

  it("reads only the session's parts and the tenant's own object", async () => {
    const shared = object('5e');
    const mine = await createTestSession(t.db, 'tenant-m1');
    const other = await createTestSession(t.db, 'tenant-m1');
    const foreign = await createTestSession(t.db, 'tenant-m2');
    await storeMediaObjects(t.db, 'tenant-m2', [shared]);
    await appendTestMessages(t.db, other.pk, [newMessage('user', [filePart(shared)], { id: 'o' })]);
    await appendTestMessages(t.db, foreign.pk, [newMessage('user', [filePart(shared)], { id: 'f' })]);
    // The session never named it; then it does, but its tenant holds no such object.
    expect(await findRecallMedia(t.db, 'tenant-m1', mine.pk, '5e')).toBeNull();
    await appendTestMessages(t.db, mine.pk, [newMessage('user', [filePart(shared)], { id: 'm' })]);
    expect(await findRecallMedia(t.db, 'tenant-m1', mine.pk, '5e')).toBeNull();
    await storeMediaObjects(t.db, 'tenant-m1', [shared]);
    expect(await findRecallMedia(t.db, 'tenant-m1', mine.pk, '5e')).toMatchObject({ messageId: 'm' });
    expect(await findRecallMedia(t.db, 'tenant-m2', foreign.pk, '5e')).toMatchObject({ messageId: 'f' });
  });
});
