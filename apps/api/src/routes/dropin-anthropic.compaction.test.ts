/**
 * `POST /v1/messages` while compaction is at work: a request that finds a compaction running
 * waits for it (bounded) or is served the read-time fit, and an overflow the upstream reports is
 * answered by an emergency compaction and one transparent retry.
 */
import { describe, expect, it } from 'vitest';
import { toolPairing } from '@compactor/llm-stub';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { fileContent } from '../test-support/agent-loop';
import { ANTHROPIC_READ_TOOL, sseEvents } from '../test-support/anthropic-agent-loop';
import { useAnthropicDropInApi } from '../test-support/anthropic-dropin-api';
import { TENANT_A_KEY } from '../test-support/api';
import { buildServerOn } from '../test-support/server-on';
import { answersStored } from '@compactor/gateway';

const WINDOW = 8192;
const MAX_OUTPUT = 1024;
// Each of the workers' LLM calls takes a while: a compaction is still running when the request
// that started it reads its context.
const api = useAnthropicDropInApi({ workers: true, summarizer: { faults: { latencyMs: 300 } } });
const windowHeaders = {
  'x-compactor-context-window': String(WINDOW),
  'x-compactor-max-output-tokens': String(MAX_OUTPUT),
};

/** A conversation `tasks` tool-using turns long that an agent brings to Compactor all at once. */
function history(tasks: number, label: string): MessageParam[] {
  const messages: MessageParam[] = [];
  for (let task = 1; task <= tasks; task++) {
    const path = `${label}-${task}.ts`;
    const id = `toolu_${label}_${task}`;
    messages.push(
      { role: 'user', content: `Task ${task}: fix ${path}.` },
      { role: 'assistant', content: [{ type: 'tool_use', id, name: 'read', input: { path } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: fileContent(path) }] },
      { role: 'assistant', content: `Fixed ${path}.` },
    );
  }
  messages.push({ role: 'user', content: 'What next?' });
  return messages;
}

const body = (messages: MessageParam[], label: string) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: MAX_OUTPUT,
  system: `You are a coding agent (${label}).`,
  messages,
  tools: [ANTHROPIC_READ_TOOL],
});

async function compactionsOf(session: string): Promise<{ reason: string; status: string }[]> {
  await answersStored();
  const { rows } = await api.database.database.pool.query(
    `select c.reason, c.status from compactions c join sessions s on s.pk = c.session_pk where s.id = $1`,
    [session],
  );
  return rows;
}

function expectFits(index: number): void {
  const request = api.upstream.requests[index]!;
  expect(request.status).toBe(200);
  expect(request.promptTokens).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
  expect(toolPairing(request.messages)).toEqual({ unansweredCalls: [], orphanResults: [] });
}

describe('a request that finds a compaction running', () => {
  it('waits for it, bounded, and is served the compacted context', async () => {
    const client = api.client({ 'x-compactor-session': 'busy', ...windowHeaders });
    const before = api.upstream.requests.length;
    const { response } = await client.messages.create(body(history(30, 'busy'), 'busy')).withResponse();
    expect(response.headers.get('x-compactor-fit')).toBe('view');
    expect(api.upstream.requests.length - before).toBe(1);
    expectFits(before);
    expect((await compactionsOf('busy')).length).toBeGreaterThan(0);
  });

  it('past the bound, is served the read-time fit of the context at once', async () => {
    // Its own API with a short bound and a queue no worker reads: the compaction stays pending.
    const impatient = await buildServerOn(api.database.db, 'dropin-anthropic-impatient', {
      dropIn: {
        anthropic: { baseURL: new URL(api.recorder.url).origin, apiKey: 'stub' },
        compactionWaitMs: 200,
      },
    });
    try {
      const before = api.upstream.requests.length;
      const response = await impatient.app.inject({
        method: 'POST',
        url: '/v1/messages',
        headers: { 'x-api-key': TENANT_A_KEY, 'x-compactor-session': 'impatient', ...windowHeaders },
        payload: body(history(30, 'impatient'), 'impatient'),
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['x-compactor-fit']).toBe('interim');
      expectFits(before);
    } finally {
      await impatient.close();
    }
  });
});

describe('an overflow the upstream reports', () => {
  it.each([false, true])(
    'stream %s: is compacted away and retried once, and the client gets the answer',
    async (stream) => {
      const session = `overflowing-${stream}`;
      // The provider's window is smaller than the session was told: the first call overflows.
      const client = api.client({
        'x-compactor-session': session,
        ...windowHeaders,
        'x-stub-context-window': '2800',
      });
      // Below the auto compaction's threshold, but not below the provider's window.
      const request = { ...body(history(8, session), session), max_tokens: 256 };
      const before = api.upstream.requests.length;
      const answered = stream
        ? await client.messages.stream(request).finalMessage()
        : await client.messages.create(request);
      // What the client got is the answer to the attempt that fitted.
      const fitted = api.recorder.answers.at(-1)!.body;
      const content = stream
        ? sseEvents(fitted).flatMap((event) =>
            event.type === 'content_block_delta' && event.delta.type === 'text_delta'
              ? [event.delta.text]
              : [],
          )
        : (JSON.parse(fitted) as { content: { text?: string }[] }).content.flatMap((b) =>
            b.text ? [b.text] : [],
          );
      const seen = answered.content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
      expect(seen.join('')).toBe(content.join(''));
      const attempts = api.upstream.requests.slice(before);
      expect(attempts.map((r) => r.status)).toEqual([400, 200]);
      expect(attempts[1]!.promptTokens).toBeLessThan(attempts[0]!.promptTokens);
      expect(toolPairing(attempts[1]!.messages)).toEqual({ unansweredCalls: [], orphanResults: [] });
      const compactions = await compactionsOf(session);
      expect(compactions.map((c) => [c.reason, c.status])).toContainEqual(['overflow', 'completed']);
    },
  );

  it('that no compaction can resolve reaches the client as the provider said it', async () => {
    const client = api.client({
      'x-compactor-session': 'hopeless',
      ...windowHeaders,
      'x-stub-context-window': '1100',
    });
    const before = api.upstream.requests.length;
    const failure = await client.messages
      .create(body(history(6, 'hopeless'), 'hopeless'))
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 400, type: 'invalid_request_error' });
    expect((failure as Error).message).toMatch(/prompt is too long|exceed context limit/);
    expect(api.upstream.requests.slice(before).map((r) => r.status)).toEqual([400, 400]);
  });
});
