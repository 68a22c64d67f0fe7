/**
 * A completed compaction's prompt-cache effect in the API's answer (`cache`), with values worked
 * out by hand: claude-sonnet-4-5 (cache reads $0.30, writes $3.75 per million tokens), a
 * 2,000-token system prompt, 14,500 tokens before, the last model call's cache 14,500 tokens.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Part, Role } from '@compactor/core';
import type { NewMessage } from '@compactor/db';
import { appendTestMessages } from '@compactor/db/testing';
import type { Tokenizer } from '@compactor/tokenizer';
import { useTestApi } from '../test-support/api';
import { newSession, sessionPk } from '../test-support/helpers';
import { useInProcessWorker } from '../test-support/in-process-worker';

const api = useTestApi();
const worker = useInProcessWorker(api);

const NOW = new Date('2026-11-27T12:00:00.000Z');

function message(role: Role, tokens: number, extra: Partial<NewMessage> = {}): NewMessage {
  const parts: Part[] = [{ type: 'text', text: `${tokens} tokens`, tokens }];
  return {
    id: `msg_${randomUUID()}`,
    role,
    parts,
    finish: role === 'assistant' ? 'stop' : null,
    error: null,
    usage: null,
    createdAt: new Date(NOW.getTime() - 600_000),
    metadata: {},
    contentHash: randomUUID(),
    ...extra,
  };
}

/** Every text the compaction writes counts 300 tokens, so the summary's size is known. */
const fixedCounter = {
  encoding: 'o200k_base',
  countSync: () => 300,
  count: async () => 300,
} as unknown as Tokenizer;

describe('the cache effect of a compaction, in the API', () => {
  it('GET /v1/compactions/{id} answers it; a pending compaction has none', async () => {
    await newSession(api, 'cache-1', {
      model: { id: 'claude-sonnet-4-5' },
      policy: { estimate: 'exact', prune: false },
    });
    const pk = await sessionPk(api, 'cache-1');
    await appendTestMessages(api.database.db, pk, [
      message('system', 2_000),
      message('user', 3_000),
      message('assistant', 3_000),
      message('user', 3_000),
      message('assistant', 3_000, {
        usage: { input: 200, output: 100, reasoning: 0, cacheRead: 13_500, cacheWrite: 1_000 },
        createdAt: new Date(NOW.getTime() - 30_000),
      }),
      message('user', 500),
    ]);
    const requested = await api.request({
      method: 'POST',
      url: '/v1/sessions/cache-1/compactions',
      payload: { keepRecentTokens: 500, strategy: 'truncate' },
    });
    expect(requested.statusCode, requested.body).toBe(202);
    expect(requested.json()).toMatchObject({ status: 'pending', cache: null });

    await worker.run(requested.json().id, {
      resources: { clock: () => NOW, tokenizerFor: () => fixedCounter },
    });

    const shown = (
      await api.request({ method: 'GET', url: `/v1/compactions/${requested.json().id}` })
    ).json();
    // After: the pinned 2,000, the request and summary messages (300 each), the last 500. The
    // pinned 2,000 stay cached, 12,500 are invalidated; the next prompt costs 2,000 × 0.30 +
    // 1,100 × 3.75 = 4,725 µ$ against 14,500 × 0.30 = 4,350: 375 µ$ more; each later turn
    // reads 11,400 fewer (3,420 µ$), which repays it on the first.
    expect(shown).toMatchObject({
      status: 'completed',
      tokensBefore: 14_500,
      tokensAfter: 3_100,
      cache: {
        invalidatedTokens: 12_500,
        rewriteCostUsd: 0.000375,
        savingPerTurnUsd: 0.00342,
        breakEvenTurns: 1,
      },
    });
  });
});
