/**
 * The context memo (sessions ./context-memo.ts) holds: over long tool-using agent loops through
 * both SDKs' shapes, with compactions and prunes completing between turns, a revert, and another
 * writer appending to and patching the session through the sessions layer meanwhile, every
 * context served upstream is, byte for byte, the one a read that keeps nothing gives at that
 * moment, and so is every GET /context between turns.
 *
 * The workers are paused during each drop-in call (and the other writer waits), so "that moment"
 * is exact: the truth is read when the upstream request arrives, before it is answered.
 */
import { describe, expect, it } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { answersStored, type DropInSettings } from '@compactor/gateway';
import { sessionContext } from '@compactor/sessions';
import { getTokenizer } from '@compactor/tokenizer';
import { fileContent, READ_TOOL } from '../test-support/agent-loop';
import { noEvents, TENANT, usePausableWorkers, useTruthProxy } from '../test-support/context-truth';
import { TENANT_A_KEY } from '../test-support/api';
import { ANTHROPIC_READ_TOOL } from '../test-support/anthropic-agent-loop';
import { ANTHROPIC_DROP_IN } from '../test-support/anthropic-dropin-api';
import {
  OPENAI_DROP_IN,
  useDropInApiOf,
  type DropInApiOf,
  type DropInProvider,
} from '../test-support/dropin-api';

const WINDOW = 8192;
const MAX_OUTPUT = 1024;
const CALLS = 60;
const windowHeaders = {
  'x-compactor-context-window': String(WINDOW),
  'x-compactor-max-output-tokens': String(MAX_OUTPUT),
};

interface Harness {
  api: DropInApiOf<unknown>;
  proxy: ReturnType<typeof useTruthProxy>;
  workers: ReturnType<typeof usePausableWorkers>;
}

function useHarness<Client>(provider: DropInProvider<Client>): Harness & { api: DropInApiOf<Client> } {
  // Registered first: its beforeAll starts the proxy before the API is built to call it.
  const proxy = useTruthProxy(provider.protocol, () => api);
  const api = useDropInApiOf(provider, {
    dropIn: {
      // Read when the API is built, after the proxy listens.
      get [provider.protocol]() {
        return { baseURL: proxy.url, apiKey: 'stub' };
      },
      compactionWaitMs: 50,
    } as Partial<DropInSettings>,
  });
  const workers = usePausableWorkers(() => api);
  return { api, proxy, workers };
}

const openai = useHarness(OPENAI_DROP_IN);
const anthropic = useHarness(ANTHROPIC_DROP_IN);

/** What the session's GET /context serves (through this process's memo) against a read keeping nothing. */
async function expectContextRead(h: Harness, session: string): Promise<void> {
  const response = await h.api.server.request('GET', `/v1/sessions/${session}/context`);
  expect(response.statusCode, response.body).toBe(200);
  const truth = await sessionContext(
    {
      db: h.api.database.db,
      tokenizerFor: () => getTokenizer('o200k_base'),
      events: noEvents,
    },
    { tenantId: TENANT, id: session },
    { format: 'native', fit: 'auto', waitMs: 0 },
    {},
    null,
  );
  expect((response.json() as { messages: unknown }).messages).toEqual(
    JSON.parse(JSON.stringify(truth.messages)),
  );
}

/** Waits until the workers have nothing left (compactions and prunes completed). */
async function settled(h: Harness): Promise<void> {
  const deadline = Date.now() + 60_000;
  // A job queued by the last write may reach the workers a moment later: idle twice in a row.
  let quiet = 0;
  while (quiet < 3) {
    await new Promise((resolve) => setTimeout(resolve, 30));
    quiet = h.workers.idle() ? quiet + 1 : 0;
    if (Date.now() > deadline) throw new Error('the workers did not settle');
  }
}

/**
 * Between turns, the session's other writer and its compactions: every third turn an append
 * through the messages API (an assistant turn with a pending call of its own), completed by a
 * PATCH on the next (its result and a text part appended: an old message changes); every tenth
 * a compaction asked for and a prune (the loop reverts one, once).
 */
async function betweenTurns(h: Harness, session: string, call: number): Promise<void> {
  const { server } = h.api;
  const note = `w-${session}-${call - 1}`;
  if (call % 3 === 1 && call > 1) {
    const patched = await server.request('POST', `/v1/sessions/${session}/messages`, {
      messages: [{ id: `${note}-user`, role: 'user', parts: [{ type: 'text', text: `A note ${call}.` }] }],
    });
    expect(patched.statusCode, patched.body).toBe(201);
  }
  if (call % 3 === 0) {
    const appended = await server.request('POST', `/v1/sessions/${session}/messages`, {
      messages: [
        {
          id: `w-${session}-${call}`,
          role: 'assistant',
          parts: [
            { type: 'text', text: `Checking the build (${call}).` },
            {
              type: 'tool',
              callId: `wc-${session}-${call}`,
              tool: 'bash',
              status: 'pending',
              input: { cmd: 'make' },
            },
          ],
        },
      ],
    });
    expect(appended.statusCode, appended.body).toBe(201);
  }
  if (call % 3 === 1 && call > 1) {
    const response = await h.api.server.app.inject({
      method: 'PATCH',
      url: `/v1/sessions/${session}/messages/w-${session}-${call - 1}`,
      headers: { authorization: `Bearer ${TENANT_A_KEY}` },
      payload: {
        finish: 'tool-calls',
        usage: { input: 1500, output: 20 },
        parts: [
          {
            type: 'tool',
            callId: `wc-${session}-${call - 1}`,
            tool: 'bash',
            status: 'completed',
            output: 'ok '.repeat(200),
          },
        ],
      },
    });
    expect(response.statusCode, response.body).toBe(200);
  }
  if (call % 10 === 5) {
    const asked = await server.request('POST', `/v1/sessions/${session}/compactions`, {});
    expect([200, 201, 202, 409], asked.body).toContain(asked.statusCode);
  }
  if (call % 10 === 8) {
    const pruned = await server.request('POST', `/v1/sessions/${session}/prune`, {});
    expect([200, 201, 202, 409], pruned.body).toContain(pruned.statusCode);
  }
}

const EAGER_PRUNING = { protectTokens: 300, minimumTokens: 50, protectUserTurns: 1, cacheAware: false };

async function patchSession(h: Harness, session: string, payload: Record<string, unknown>): Promise<void> {
  const response = await h.api.server.app.inject({
    method: 'PATCH',
    url: `/v1/sessions/${session}`,
    headers: { authorization: `Bearer ${TENANT_A_KEY}` },
    payload,
  });
  expect(response.statusCode, response.body).toBe(200);
}

/** Reverts the session's latest completed compaction (nothing running: the workers have settled). */
async function revertLatest(h: Harness, session: string): Promise<boolean> {
  const { rows } = await h.api.database.database.pool.query<{ id: string }>(
    `select c.id from compactions c join sessions s on s.pk = c.session_pk
     where s.id = $1 and c.status = 'completed' order by c.finished_at desc limit 1`,
    [session],
  );
  if (!rows[0]) return false;
  const reverted = await h.api.server.request('POST', `/v1/compactions/${rows[0].id}/revert`, {});
  expect([200, 201, 202], reverted.body).toContain(reverted.statusCode);
  return true;
}

/** One loop: each call's served context compared with the truth, the GET /context too. */
async function runLoop(h: Harness, session: string, call: (i: number) => Promise<void>): Promise<void> {
  h.proxy.current.session = session;
  const before = h.proxy.compared.length;
  let reverted = false;
  for (let i = 0; i < CALLS; i++) {
    await h.workers.pause();
    await call(i);
    await answersStored();
    await expectContextRead(h, session);
    // Pruning as eager as the policy allows, so that prunes complete between turns at 8k.
    if (i === 0) await patchSession(h, session, { policy: { pruning: EAGER_PRUNING } });
    await betweenTurns(h, session, i + 1);
    h.workers.resume();
    await settled(h);
    await expectContextRead(h, session);
    // Once, from the 25th call on, as soon as a compaction has completed.
    if (!reverted && i + 1 >= 25 && (await revertLatest(h, session))) {
      reverted = true;
      await expectContextRead(h, session);
    }
  }
  const compared = h.proxy.compared.slice(before);
  expect(compared).toHaveLength(CALLS);
  compared.forEach((c, i) => expect(c.served, `call ${i}`).toBe(c.truth));
  const { rows } = await h.api.database.database.pool.query<{ status: string; reverted: boolean }>(
    `select c.status, c.reverted_at is not null as reverted from compactions c
     join sessions s on s.pk = c.session_pk where s.id = $1`,
    [session],
  );
  // The loop did what it says: compactions completed, one was reverted, outputs were pruned.
  expect(rows.filter((r) => r.status === 'completed' && !r.reverted).length).toBeGreaterThan(0);
  expect(rows.filter((r) => r.reverted)).toHaveLength(1);
  const prunes = await h.api.database.database.pool.query<{ n: number }>(
    `select count(*)::int as n from part_prunes p join sessions s on s.pk = p.session_pk where s.id = $1`,
    [session],
  );
  expect(prunes.rows[0]!.n).toBeGreaterThan(0);
}

describe('the context memo under an agent loop', () => {
  it('OpenAI Chat: every served context equals a read that keeps nothing', async () => {
    const client = openai.api.client({ 'x-compactor-session': 'memo-openai', ...windowHeaders }) as OpenAI;
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are a coding agent.' }];
    let task = 0;
    await runLoop(openai, 'memo-openai', async (i) => {
      if (messages.at(-1)?.role !== 'tool')
        messages.push({ role: 'user', content: `Task ${++task}: fix module ${task}.` });
      const body = { model: 'gpt-4o', messages: [...messages], tools: [READ_TOOL], max_tokens: MAX_OUTPUT };
      const message =
        i % 2 === 0
          ? (await client.chat.completions.create(body)).choices[0]!.message
          : (await client.chat.completions.stream({ ...body, stream: true }).finalChatCompletion())
              .choices[0]!.message;
      messages.push(message);
      for (const toolCall of message.tool_calls ?? []) {
        if (toolCall.type !== 'function') continue;
        const { path } = JSON.parse(toolCall.function.arguments) as { path: string };
        messages.push({ role: 'tool', tool_call_id: toolCall.id, content: fileContent(path) });
      }
    });
  }, 600_000);

  it('Anthropic Messages: every served context equals a read that keeps nothing', async () => {
    const client = anthropic.api.client({
      'x-compactor-session': 'memo-anthropic',
      ...windowHeaders,
    }) as Anthropic;
    const messages: MessageParam[] = [];
    let task = 0;
    await runLoop(anthropic, 'memo-anthropic', async (i) => {
      const last = messages.at(-1);
      const endsWithResults =
        last?.role === 'user' &&
        Array.isArray(last.content) &&
        last.content.some((b) => b.type === 'tool_result');
      if (!endsWithResults) messages.push({ role: 'user', content: `Task ${++task}: fix module ${task}.` });
      const body = {
        model: 'claude-sonnet-4-5',
        system: 'You are a coding agent.',
        max_tokens: MAX_OUTPUT,
        messages: [...messages],
        tools: [ANTHROPIC_READ_TOOL],
      };
      const answer =
        i % 2 === 0 ? await client.messages.create(body) : await client.messages.stream(body).finalMessage();
      messages.push({ role: 'assistant', content: answer.content });
      const uses = answer.content.filter((block) => block.type === 'tool_use');
      if (uses.length > 0)
        messages.push({
          role: 'user',
          content: uses.map((use) => ({
            type: 'tool_result' as const,
            tool_use_id: use.id,
            content: fileContent(String((use.input as { path?: string }).path ?? use.id)),
          })),
        });
    });
  }, 600_000);
});
