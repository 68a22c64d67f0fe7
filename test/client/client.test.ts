/**
 * Every method of the client against the real API (listening on a port, its own database),
 * with every answer checked against the contract (`validateResponses`). No workers run here:
 * compactions stay pending, which is all these calls need (events.test.ts runs them).
 */
import { describe, expect, it } from 'vitest';
import { TENANT_B_KEY } from '@compactor/api/testing';
import { CompactorApiError } from '@compactor/client';
import { useLiveApi } from './live-api';

const live = useLiveApi();

/** A rejected promise's {@link CompactorApiError} (fails the test when it resolves or throws another). */
async function apiError(promise: Promise<unknown>): Promise<CompactorApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CompactorApiError);
  return error as CompactorApiError;
}

describe('sessions', () => {
  it('creates (idempotently), reads, patches and deletes a session', async () => {
    const client = live.client();
    const body = { id: 'c-s1', model: { id: 'gpt-4o', contextWindow: 64_000 }, metadata: { user: 'u1' } };
    const created = await client.createSession(body);
    expect(created).toMatchObject({ id: 'c-s1', model: { id: 'gpt-4o', contextWindow: 64_000 } });
    expect(created.status).toMatchObject({ tokens: 0, contextMessages: 0, overflow: false });
    expect((await client.createSession(body)).createdAt).toBe(created.createdAt);

    expect((await client.getSession('c-s1')).metadata).toEqual({ user: 'u1' });
    const patched = await client.patchSession('c-s1', {
      policy: { preset: 'opencode' },
      metadata: { user: null, plan: 'pro' },
    });
    expect(patched.metadata).toEqual({ plan: 'pro' });
    expect(patched.effectivePolicy).toMatchObject({ preset: 'opencode' });

    await client.deleteSession('c-s1');
    const gone = await apiError(client.getSession('c-s1'));
    expect(gone).toMatchObject({ status: 404, code: 'not_found', request: 'GET /v1/sessions/c-s1' });
  });

  it('throws the API error body: status, code, message, details', async () => {
    const client = live.client();
    await client.createSession({ id: 'c-s2', model: { id: 'gpt-4o' } });
    const conflict = await apiError(client.createSession({ id: 'c-s2', model: { id: 'gpt-4o-mini' } }));
    expect(conflict).toMatchObject({ status: 409, code: 'conflict' });

    const invalid = await apiError(
      client.createSession({ id: 'c-s3', model: { id: 'gpt-4o', contextWindow: 2 ** 31 } }),
    );
    expect(invalid).toMatchObject({ status: 400, code: 'validation_error' });
    expect(invalid.message).toContain('contextWindow');
    expect((invalid.details as { issues: unknown[] }).issues.length).toBeGreaterThan(0);

    const unauthorized = await apiError(live.client({ apiKey: 'not-a-key' }).getSession('c-s2'));
    expect(unauthorized).toMatchObject({ status: 401, code: 'unauthorized' });
    // Another tenant's session does not exist for this one.
    const other = await apiError(live.client({ apiKey: TENANT_B_KEY }).getSession('c-s2'));
    expect(other.code).toBe('not_found');
  });

  it('encodes ids that need it in the path', async () => {
    const client = live.client();
    const id = 'a/b?c#d%e';
    await client.createSession({ id, model: { id: 'gpt-4o' } });
    expect((await client.getSession(id)).id).toBe(id);
  });
});

describe('messages and context', () => {
  it('appends, pages the history, patches a streamed turn and reads the context both ways', async () => {
    const client = live.client();
    await client.createSession({ id: 'c-m1', model: { id: 'gpt-4o' } });
    const appended = await client.appendMessages('c-m1', [
      { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'List the files' }] },
      {
        id: 'a1',
        role: 'assistant',
        parts: [{ type: 'tool', callId: 'call_1', tool: 'ls', status: 'running', input: { dir: '.' } }],
      },
    ]);
    expect(appended.messages).toEqual([
      { id: 'u1', seq: 1, created: true },
      { id: 'a1', seq: 2, created: true },
    ]);
    expect(appended.status.contextMessages).toBe(2);
    expect(appended.compaction).toBeNull();
    // The body form, re-posted: idempotent by client id.
    const again = await client.appendMessages('c-m1', {
      messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'List the files' }] }],
    });
    expect(again.messages).toEqual([{ id: 'u1', seq: 1, created: false }]);

    const patched = await client.patchMessage('c-m1', 'a1', {
      finish: 'stop',
      usage: { input: 120, output: 8 },
      parts: [{ type: 'tool', callId: 'call_1', tool: 'ls', status: 'completed', output: 'README.md' }],
    });
    expect(patched).toMatchObject({ id: 'a1', finish: 'stop', compaction: null });
    expect(patched.usage).toEqual({ input: 120, output: 8, reasoning: 0, cacheRead: 0, cacheWrite: 0 });
    expect(patched.parts[0]).toMatchObject({ type: 'tool', output: 'README.md', input: { dir: '.' } });

    const first = await client.listMessages('c-m1', { limit: 1 });
    expect(first.messages.map((m) => m.id)).toEqual(['u1']);
    expect(first.nextAfterSeq).toBe(1);
    const rest = await client.listMessages('c-m1', { afterSeq: first.nextAfterSeq ?? 0 });
    expect(rest.messages.map((m) => m.id)).toEqual(['a1']);
    expect(rest.nextAfterSeq).toBeNull();

    const native = await client.getContext('c-m1');
    expect(native.messages.map((m) => m.id)).toEqual(['u1', 'a1']);
    expect(native.tokens).toBeGreaterThan(0);
    const openai = await client.getContext('c-m1', { format: 'openai' });
    expect(openai.messages.map((m) => m['role'])).toEqual(['user', 'assistant', 'tool']);
  });
});

describe('a context over the window', () => {
  it('comes fitted, says how, and comes as stored with fit: none', async () => {
    const client = live.client();
    // No workers here and no auto compaction: the view stays over its usable input.
    await client.createSession({
      id: 'c-fit',
      model: { id: 'gpt-4o', contextWindow: 4_096 },
      policy: { auto: false },
    });
    const paragraph = 'The parser must keep every comment. '.repeat(300);
    await client.appendMessages(
      'c-fit',
      ['Fix the parser.', paragraph, 'Now the tests.', paragraph, 'Ship it.'].map((text) => ({
        role: 'user' as const,
        parts: [{ type: 'text' as const, text }],
      })),
    );
    const fitted = await client.getContext('c-fit', { waitMs: 50 });
    expect(fitted.fit).toBe('interim');
    expect(fitted.tokens).toBeLessThanOrEqual(fitted.usable!);
    expect(fitted.activeCompaction).toBeNull();
    const raw = await client.getContext('c-fit', { fit: 'none', format: 'openai' });
    expect(raw.fit).toBe('over');
    expect(raw.tokens).toBeGreaterThan(raw.usable!);
    expect(raw.messages).toHaveLength(5);
    expect((await apiError(client.getContext('c-fit', { fit: 'none', waitMs: 10 }))).status).toBe(400);
  });
});

describe('compactions', () => {
  it('requests one with every option, idempotently, then lists and reads it', async () => {
    const client = live.client();
    await client.createSession({ id: 'c-c1', model: { id: 'gpt-4o' } });
    await client.appendMessages('c-c1', [{ role: 'user', parts: [{ type: 'text', text: 'hello' }] }]);
    const request = {
      keepRecentTokens: 1000,
      instructions: 'Keep the file names',
      strategy: 'truncate' as const,
      idempotencyKey: 'compact-c1-1',
    };
    const first = await client.requestCompaction('c-c1', request);
    expect(first.created).toBe(true);
    expect(first.compaction).toMatchObject({
      sessionId: 'c-c1',
      reason: 'manual',
      strategy: 'truncate',
      keepRecentTokens: 1000,
      status: 'pending',
    });
    const retried = await client.requestCompaction('c-c1', request);
    expect(retried).toEqual({ created: false, compaction: first.compaction });
    const reused = await apiError(client.requestCompaction('c-c1', { ...request, keepRecentTokens: 2000 }));
    expect(reused).toMatchObject({ status: 409, code: 'conflict' });

    const page = await client.listCompactions('c-c1', { limit: 10 });
    expect(page.compactions.map((c) => c.id)).toEqual([first.compaction.id]);
    expect(page.nextBefore).toBeNull();
    const detail = await client.getCompaction(first.compaction.id);
    expect(detail).toMatchObject({ id: first.compaction.id, steps: [] });
    // Only a completed compaction can be reverted (events.test.ts reverts one the workers ran).
    const unfinished = await apiError(client.revertCompaction(first.compaction.id));
    expect(unfinished).toMatchObject({ status: 409, code: 'conflict' });
    expect(unfinished.details).toMatchObject({ reason: 'not_completed', status: 'pending' });
    expect(await apiError(client.revertCompaction('cmp_missing'))).toMatchObject({ status: 404 });
  });

  it('starts a prune job and takes overflow reports', async () => {
    const client = live.client();
    await client.createSession({ id: 'c-c2', model: { id: 'gpt-4o' } });
    await client.appendMessages('c-c2', [{ role: 'user', parts: [{ type: 'text', text: 'hello' }] }]);
    expect((await client.prune('c-c2')).jobId).toMatch(/^prn_/);

    const fine = await client.reportOverflow('c-c2', { error: 'rate limited, slow down', status: 429 });
    expect(fine).toEqual({ overflow: false, kind: null, matched: null, compaction: null });
    const overflow = await client.reportOverflow('c-c2', {
      error:
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 131000 tokens.",
      status: 400,
    });
    expect(overflow).toMatchObject({ overflow: true, kind: 'error' });
    expect(overflow.compaction).toMatchObject({ reason: 'overflow', force: true, sessionId: 'c-c2' });
  });
});
