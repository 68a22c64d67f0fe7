/**
 * Issue 36 from a new user's seat: the README's agent loop (examples/agent-loop.ts, usage mapped by
 * `usageFromOpenAI`) on an 8,192-token window with the default policy, against the real API,
 * workers and the LLM stub as a provider that caches prompts as OpenAI does. Every context the
 * loop reads, right after it appends the user's turn, must fit the window's usable tokens; and the
 * usage it reports must count the cached prefix once (the compaction fired at ~6.5k real
 * tokens after `prompt_tokens` and `cached_tokens` were both reported).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TENANT_A_KEY } from '@compactor/api/testing';
import { CompactorClient, type OpenAIContext } from '@compactor/client';
import { runAgent } from '../../packages/client/examples/agent-loop';
import { useLiveApi } from './live-api';

const live = useLiveApi({ workers: true });
const WINDOW = 8_192;
const TURNS = 12;

/** A user turn of about 700 tokens: the next page of a service log to look at. */
const logPage = (turn: number) =>
  [`Turn ${turn}: here is the next page of the worker log, what stands out?`]
    .concat(
      Array.from(
        { length: 28 },
        (_, line) =>
          `2026-12-07T10:${String(turn).padStart(2, '0')}:${String(line).padStart(2, '0')}Z INFO worker-${line % 4} ` +
          `job ${turn * 1_000 + line} done in ${(line * 37) % 300} ms (queue depth ${(line * 13) % 40})`,
      ),
    )
    .join('\n');

interface OpenAIUsageSeen {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/**
 * Makes the stub answer as OpenAI's prompt cache does: when a prompt starts with the previous
 * one's messages, that prefix (from 1,024 tokens, in steps of 128) comes back as `cached_tokens`,
 * part of `prompt_tokens`. Returns the usages the loop received.
 */
function cachingProvider(stubUrl: string): OpenAIUsageSeen[] {
  const seen: OpenAIUsageSeen[] = [];
  let previous: { messages: string[]; promptTokens: number } | undefined;
  const passThrough = globalThis.fetch;
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url !== `${stubUrl}/chat/completions`) return passThrough(input, init);
    const messages = (JSON.parse(String(init?.body)) as { messages: unknown[] }).messages.map((m) =>
      JSON.stringify(m),
    );
    const response = await passThrough(input, init);
    if (!response.ok) return response;
    const body = (await response.json()) as { usage: OpenAIUsageSeen };
    const prefixKept = previous?.messages.every((message, i) => messages[i] === message) ?? false;
    const cacheable = prefixKept && previous!.promptTokens >= 1_024 ? previous!.promptTokens : 0;
    body.usage.prompt_tokens_details = { cached_tokens: Math.floor(cacheable / 128) * 128 };
    previous = { messages, promptTokens: body.usage.prompt_tokens };
    seen.push(body.usage);
    return Response.json(body);
  });
  return seen;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the README agent loop, a new user at 8k', () => {
  it(
    'reads 12 contexts that fit the usable window and reports cached tokens once',
    { timeout: 120_000 },
    async () => {
      const contexts: OpenAIContext[] = [];
      // The loop's own client, recording every context the API answers it.
      const client = new CompactorClient({
        baseUrl: live.url,
        apiKey: TENANT_A_KEY,
        validateResponses: true,
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          const url = new URL(input instanceof Request ? input.url : String(input));
          if (response.ok && init?.method === 'GET' && url.pathname.endsWith('/context')) {
            contexts.push((await response.clone().json()) as OpenAIContext);
          }
          return response;
        },
      });
      const session = await client.createSession({
        id: 'new-user-8k',
        model: { id: 'gpt-4o', contextWindow: WINDOW },
      });
      const usable = session.status.usable;
      expect(usable).not.toBeNull();
      const provider = cachingProvider(live.stub.url);

      const run = await runAgent({
        client,
        llm: {
          baseUrl: live.stub.url,
          apiKey: 'stub',
          model: 'gpt-4o',
          headers: { 'x-stub-context-window': String(WINDOW) },
        },
        sessionId: 'new-user-8k',
        userTurns: Array.from({ length: TURNS }, (_, i) => logPage(i + 1)),
      });

      expect(run.replies).toHaveLength(TURNS);
      // The conversation outgrew the window: without compaction the last contexts would not fit.
      const history = await client.listMessages('new-user-8k', { limit: 1000 });
      expect(history.messages.some((m) => m.summary)).toBe(true);
      // One context a turn (no overflow retries), each within the usable window by exact count: the
      // answer's own `tokens` against its `usable` (the session status's), and never `fit: "over"`.
      expect(run.overflowCompactions).toEqual([]);
      expect(contexts).toHaveLength(TURNS);
      expect(contexts.map((context) => context.usable)).toEqual(contexts.map(() => usable));
      const verdicts = contexts.map(({ tokens, usable: limit, fit }) =>
        tokens <= limit! && fit !== 'over' ? 'fits' : `${tokens} > ${limit} (fit: ${fit})`,
      );
      expect(verdicts, `${verdicts.filter((v) => v === 'fits').length} of ${TURNS} contexts fit`).toEqual(
        contexts.map(() => 'fits'),
      );

      // The provider cached, and each stored usage counts the prompt once: input + cacheRead = prompt_tokens.
      const assistants = history.messages.filter((m) => m.role === 'assistant' && !m.summary);
      expect(provider.some((usage) => usage.prompt_tokens_details.cached_tokens > 0)).toBe(true);
      expect(assistants.map((m) => (m.usage ? m.usage.input + m.usage.cacheRead : null))).toEqual(
        provider.slice(-assistants.length).map((usage) => usage.prompt_tokens),
      );
      expect(assistants.map((m) => m.usage?.cacheRead)).toEqual(
        provider.slice(-assistants.length).map((usage) => usage.prompt_tokens_details.cached_tokens),
      );
    },
  );
});
