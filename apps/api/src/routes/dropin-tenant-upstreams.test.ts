/**
 * Upstreams per tenant: each tenant's drop-in requests go to its own provider with its own key
 * (each stub here takes only its key, so a request sent with another is refused), a protocol the
 * tenant has none for goes to the default, and a tenant with neither gets the 503 in the
 * provider's shape with nothing written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { useTestDatabase } from '@compactor/db/testing';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { TENANT_A_KEY, TENANT_B_KEY } from '../test-support/api';
import { buildServerOn, type ServerOn } from '../test-support/server-on';
import { answersStored } from '@compactor/gateway';

const database = useTestDatabase();

let stubA: LlmStub;
let stubB: LlmStub;
let fallback: LlmStub;
/** Tenant A and B on their own OpenAI upstreams, A on its own Anthropic one, defaults for the rest. */
let routed: { server: ServerOn; url: string };
/** Only tenant A has an OpenAI upstream: no defaults. */
let bare: { server: ServerOn; url: string };

async function listening(server: ServerOn) {
  return { server, url: await server.app.listen({ port: 0, host: '127.0.0.1' }) };
}

beforeAll(async () => {
  stubA = await startLlmStub({ apiKey: 'sk-tenant-a' });
  stubB = await startLlmStub({ apiKey: 'sk-tenant-b' });
  fallback = await startLlmStub({ apiKey: 'sk-default' });
  routed = await listening(
    await buildServerOn(database.db, 'dropin-tenants', {
      dropIn: {
        openai: { baseURL: fallback.url, apiKey: 'sk-default' },
        anthropic: { baseURL: fallback.origin, apiKey: 'sk-default' },
        tenantUpstreams: new Map([
          [
            'tenant-a',
            {
              openai: { baseURL: stubA.url, apiKey: 'sk-tenant-a' },
              anthropic: { baseURL: stubA.origin, apiKey: 'sk-tenant-a' },
            },
          ],
          ['tenant-b', { openai: { baseURL: stubB.url, apiKey: 'sk-tenant-b' } }],
        ]),
        upstreamMaxRetries: 0,
      },
    }),
  );
  bare = await listening(
    await buildServerOn(database.db, 'dropin-tenants-bare', {
      dropIn: {
        tenantUpstreams: new Map([['tenant-a', { openai: { baseURL: stubA.url, apiKey: 'sk-tenant-a' } }]]),
        upstreamMaxRetries: 0,
      },
    }),
  );
});

afterAll(async () => {
  await routed?.server.close();
  await bare?.server.close();
  await Promise.all([stubA?.close(), stubB?.close(), fallback?.close()]);
});

const openai = (url: string, key: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
const anthropic = (url: string, key: string) => new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
const chat = (text: string) => ({ model: 'gpt-4o', messages: [{ role: 'user' as const, content: text }] });
const message = (text: string) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 128,
  messages: [{ role: 'user' as const, content: text }],
});
const lastText = (stub: LlmStub) => stub.requests.at(-1)?.messages.at(-1)?.text;

async function rowCounts(): Promise<Record<string, number>> {
  await answersStored();
  const { rows } = await database.database.pool.query(
    `select (select count(*) from sessions)::int as sessions, (select count(*) from messages)::int as messages`,
  );
  return rows[0];
}

describe('two tenants, two providers', () => {
  it("each tenant's Chat Completions go to its own upstream with its own key", async () => {
    const counts = [stubA, stubB, fallback].map((stub) => stub.requests.length);
    const a = await openai(routed.url, TENANT_A_KEY).chat.completions.create(chat('from tenant a'));
    const b = await openai(routed.url, TENANT_B_KEY).chat.completions.create(chat('from tenant b'));
    expect(a.choices[0]!.message.content).toContain('from tenant a');
    expect(b.choices[0]!.message.content).toContain('from tenant b');
    expect([stubA, stubB, fallback].map((stub, i) => stub.requests.length - counts[i]!)).toEqual([1, 1, 0]);
    expect(lastText(stubA)).toBe('from tenant a');
    expect(lastText(stubB)).toBe('from tenant b');
  });

  it('a protocol the tenant has no upstream for goes to the default', async () => {
    const counts = [stubA, stubB, fallback].map((stub) => stub.requests.length);
    await anthropic(routed.url, TENANT_A_KEY).messages.create(message('anthropic of tenant a'));
    await anthropic(routed.url, TENANT_B_KEY).messages.create(message('anthropic of tenant b'));
    expect([stubA, stubB, fallback].map((stub, i) => stub.requests.length - counts[i]!)).toEqual([1, 0, 1]);
    expect(lastText(stubA)).toBe('anthropic of tenant a');
    expect(lastText(fallback)).toBe('anthropic of tenant b');
    expect(stubA.requests.at(-1)!.protocol).toBe('anthropic');
  });
});

describe('a tenant with neither its own upstream nor a default', () => {
  it("gets the 503 in the provider's shape, nothing written, while another tenant is served", async () => {
    const before = await rowCounts();
    await expect(
      openai(bare.url, TENANT_B_KEY).chat.completions.create(chat('no upstream')),
    ).rejects.toMatchObject({
      status: 503,
      error: { code: 'upstream_not_configured' },
    });
    await expect(
      anthropic(bare.url, TENANT_A_KEY).messages.create(message('no upstream')),
    ).rejects.toMatchObject({
      status: 503,
      error: { type: 'error', error: { type: 'overloaded_error' } },
    });
    expect(await rowCounts()).toEqual(before);

    const served = await openai(bare.url, TENANT_A_KEY).chat.completions.create(
      chat('tenant a still served'),
    );
    expect(served.choices[0]!.message.content).toContain('tenant a still served');
    expect(lastText(stubA)).toBe('tenant a still served');
  });
});
