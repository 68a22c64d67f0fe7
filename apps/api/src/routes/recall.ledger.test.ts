import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { emptyLedger, mergeLedgers, type ArtifactLedger } from '@compactor/core';
import {
  completeCompaction,
  findSession,
  insertCompaction,
  revertCompaction,
  upsertCompactionLedger,
} from '@compactor/db';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';

const api = useTestApi();

async function session(id: string, key?: string) {
  const response = await api.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: 'gpt-4o' } },
    ...(key ? { key } : {}),
  });
  expect(response.statusCode).toBe(201);
  const row = await findSession(api.database.db, key ? 'tenant-b' : 'tenant-a', id);
  if (!row) throw new Error('no session');
  return row;
}

async function post(id: string, count: number) {
  const messages = Array.from({ length: count }, (_, index) => ({
    role: index % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `message ${index}` }],
    ...(index % 2 === 1 ? { finish: 'stop' } : {}),
  }));
  const response = await api.request({
    method: 'POST',
    url: `/v1/sessions/${id}/messages`,
    payload: { messages },
  });
  expect(response.statusCode).toBeLessThan(300);
}

/** A completed compaction at `boundarySeq` that stored `ledger`, as the workflow's finalize does. */
async function compactWithLedger(
  sessionPk: number,
  boundarySeq: number,
  ledger: ArtifactLedger,
  unlisted: string[],
) {
  const row = await insertCompaction(api.database.db, {
    id: `cmp_${randomUUID()}`,
    sessionPk,
    reason: 'manual',
    strategy: 'summarize',
    status: 'running',
  });
  await upsertCompactionLedger(api.database.db, {
    compactionId: row!.id,
    sessionPk,
    ledger,
    unlistedConstraints: unlisted,
  });
  const now = new Date();
  await completeCompaction(api.database.db, {
    compactionId: row!.id,
    sessionPk,
    boundarySeq,
    summaryMessages: [],
    tokensBefore: 0,
    messagesBefore: 0,
    finishedAt: now,
  });
  return row!.id;
}

/** A ledger of `files` files read at seqs 1…n (newest first), one failing and one passing command, one fact. */
function ledgerOf(files: number, throughSeq: number): ArtifactLedger {
  return {
    ...emptyLedger(),
    throughSeq,
    files: Array.from({ length: files }, (_, index) => {
      const seq = files - index;
      return { path: `src/file_${seq}.ts`, kind: 'read' as const, firstSeq: seq, lastSeq: seq, count: 1 };
    }),
    commands: [
      { command: 'npm test', outcome: 'failed', exitCode: 1, firstSeq: 2, lastSeq: 2, count: 1 },
      { command: 'npm run build', outcome: 'passed', firstSeq: 1, lastSeq: 1, count: 1 },
    ],
    facts: [{ kind: 'quantity', text: '30 s', firstSeq: 1, lastSeq: 1, count: 1 }],
    openErrors: [{ command: 'npm test', seq: 2, exitCode: 1 }],
  };
}

const recall = (id: string, query: string, key?: string) =>
  api.request({ method: 'GET', url: `/v1/sessions/${id}/recall?${query}`, ...(key ? { key } : {}) });

let firstId = '';
let secondId = '';

beforeAll(async () => {
  const row = await session('ledgered');
  await post('ledgered', 10);
  const first = ledgerOf(4, 4);
  firstId = await compactWithLedger(row.pk, 5, first, ['Never touch the public API.']);
  const second = mergeLedgers(first, {
    ...emptyLedger(),
    throughSeq: 7,
    files: [{ path: 'src/api/routes.ts', kind: 'modified', firstSeq: 6, lastSeq: 6, count: 1 }],
  });
  secondId = await compactWithLedger(row.pk, 8, second, ['Only use the stdlib.']);
  // Tenant B's session of the same id has no compaction, so no ledger.
  await session('ledgered', TENANT_B_KEY);
});

describe('GET /v1/sessions/:id/recall?kind=', () => {
  it('lists the files of the ledger in force, newest first, a page at a time', async () => {
    const page = await recall('ledgered', 'kind=files&limit=3');
    expect(page.statusCode).toBe(200);
    const body = page.json();
    expect(body).toMatchObject({ kind: 'ledger', section: 'files', total: 5, throughSeq: 7 });
    expect(body.entries.map((e: { path: string }) => e.path)).toEqual([
      'src/api/routes.ts',
      'src/file_4.ts',
      'src/file_3.ts',
    ]);
    expect(body.nextCursor).not.toBeNull();
    const next = (await recall('ledgered', `kind=files&limit=3&cursor=${body.nextCursor}`)).json();
    expect(next.entries.map((e: { path: string }) => e.path)).toEqual(['src/file_2.ts', 'src/file_1.ts']);
    expect(next.nextCursor).toBeNull();
  });

  it('lists commands with their outcomes and the open errors, and facts with the unlisted constraints', async () => {
    const commands = (await recall('ledgered', 'kind=commands')).json();
    expect(commands.entries).toEqual([
      { command: 'npm test', outcome: 'failed', exitCode: 1, firstSeq: 2, lastSeq: 2, count: 1 },
      { command: 'npm run build', outcome: 'passed', firstSeq: 1, lastSeq: 1, count: 1 },
    ]);
    expect(commands.openErrors).toEqual([{ command: 'npm test', seq: 2, exitCode: 1 }]);
    const facts = (await recall('ledgered', 'kind=facts')).json();
    expect(facts.entries).toEqual([{ kind: 'quantity', text: '30 s', firstSeq: 1, lastSeq: 1, count: 1 }]);
    expect(facts.unlistedConstraints).toEqual(['Only use the stdlib.']);
  });

  it("answers another tenant's session from its own (empty) ledger, and 404 for a session it lacks", async () => {
    const other = (await recall('ledgered', 'kind=files', TENANT_B_KEY)).json();
    expect(other).toMatchObject({ kind: 'ledger', total: 0, entries: [], throughSeq: 0 });
    expect((await recall('nobody', 'kind=files')).statusCode).toBe(404);
  });

  it('refuses hostile or mixed queries with a 400', async () => {
    for (const query of [
      'kind=secrets',
      'kind=files&q=x',
      'kind=files&callId=call_1',
      'kind=files&cursor=../../etc',
      'q=x&cursor=o3',
      'q=x&limit=50',
      'kind=files&limit=100000',
    ]) {
      const response = await recall('ledgered', query);
      expect(response.statusCode, query).toBe(400);
    }
  });

  it('serves the previous compaction ledger once the latest is reverted', async () => {
    await revertCompaction(api.database.db, { tenantId: 'tenant-a', compactionId: secondId, at: new Date() });
    const files = (await recall('ledgered', 'kind=files')).json();
    expect(files).toMatchObject({ total: 4, throughSeq: 4 });
    const facts = (await recall('ledgered', 'kind=facts')).json();
    expect(facts.unlistedConstraints).toEqual(['Never touch the public API.']);
    expect(firstId).not.toBe(secondId);
  });
});
