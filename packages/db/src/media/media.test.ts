import type { Message } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test-support/test-database';
import { mediaReference, toDataUrl } from './references';
import { resolveMediaReferences } from './resolve';
import { loadMediaObjects, storeMediaObjects } from './store';

const t = useTestDatabase();

const object = (byte: number) => ({
  sha256: byte.toString(16).padStart(64, '0'),
  mime: 'image/png',
  data: new Uint8Array([0x89, byte, byte]),
  width: 10,
  height: 10,
  pages: null,
});

const withFile = (url: string): Message => ({
  id: 'm1',
  seq: 1,
  role: 'user',
  parts: [{ type: 'file', mime: 'image/png', filename: 'a.png', url, tokens: 255 }],
  finish: null,
  error: null,
  usage: null,
  createdAt: '2026-01-05T10:00:00.000Z',
  metadata: {},
  summary: false,
  compactionId: null,
});

describe('media objects', () => {
  it('stores an object once per tenant, and a tenant reads only its own', async () => {
    expect(await storeMediaObjects(t.db, 'tenant-a', [object(1), object(1), object(2)])).toBe(2);
    expect(await storeMediaObjects(t.db, 'tenant-a', [object(1), object(3)])).toBe(1);
    expect(await storeMediaObjects(t.db, 'tenant-b', [object(1)])).toBe(1);
    const a = await loadMediaObjects(t.db, 'tenant-a', [object(1).sha256, object(3).sha256]);
    expect([...a.keys()].sort()).toEqual([object(1).sha256, object(3).sha256]);
    expect(a.get(object(1).sha256)!.data).toEqual(Buffer.from([0x89, 1, 1]));
    expect((await loadMediaObjects(t.db, 'tenant-c', [object(1).sha256])).size).toBe(0);
  });

  it('serves a reference as its data URL, and one the tenant does not hold as a note', async () => {
    await storeMediaObjects(t.db, 'tenant-r', [object(9)]);
    const [held] = await resolveMediaReferences(t.db, 'tenant-r', [withFile(mediaReference(object(9)))]);
    expect(held!.parts[0]).toMatchObject({ type: 'file', url: toDataUrl('image/png', object(9).data) });
    const [other] = await resolveMediaReferences(t.db, 'tenant-x', [withFile(mediaReference(object(9)))]);
    expect(other!.parts[0]).toEqual({
      type: 'text',
      text: '[Attached image a.png is no longer stored (image/png)]',
      tokens: 255,
    });
    const plain = [withFile('https://example.test/a.png')];
    expect(await resolveMediaReferences(t.db, 'tenant-r', plain)).toBe(plain);
  });
});
