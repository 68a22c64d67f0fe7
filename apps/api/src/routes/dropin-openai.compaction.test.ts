/**
 * The drop-in route while compaction is at work: a request that finds a compaction running waits
 * for it (bounded) or is served the read-time fit, and an overflow the upstream reports is
 * answered by an emergency compaction and one transparent retry.
 */
import { describe, expect, it } from 'vitest';
import { toolPairing } from '@compactor/llm-stub';
import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { fileContent, READ_TOOL, sseChunks } from '../test-support/agent-loop';
import { TENANT_A_KEY } from '../test-support/api';
import { useDropInApi } from '../test-support/dropin-api';
import { buildServerOn } from '../test-support/server-on';
import { answersStored } from '@compactor/gateway';

const WINDOW = 8192;
const MAX_OUTPUT = 1024;
// Each of the workers' LLM calls takes a while: a compaction is still running when the request
// that started it reads its context.
const api = useDropInApi({ workers: true, summarizer: { faults: { latencyMs: 300 } } });
const windowHeaders = {
  'x-compactor-context-window': String(WINDOW),
  'x-compactor-max-output-tokens': String(MAX_OUTPUT),
};

/** A conversation `tasks` tool-using turns long that an agent brings to Compactor all at once. */
function history(tasks: number, label: string): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: `You are a coding agent (${label}).` },
  ];
  for (let task = 1; task <= tasks; task++) {
    const path = `${label}-${task}.ts`;
    const id = `call_${label}_${task}`;
    messages.push(
      { role: 'user', content: `Task ${task}: fix ${path}.` },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id, type: 'function', function: { name: 'read', arguments: JSON.stringify({ path }) } },
        ],
      },
      { role: 'tool', tool_call_id: id, content: fileContent(path) },
      { role: 'assistant', content: `Fixed ${path}.` },
    );
  }
  messages.push({ role: 'user', content: 'What next?' });
  return messages;
}

const body = (messages: ChatCompletionMessageParam[]) => ({
  model: 'gpt-4o',
  messages,
  tools: [READ_TOOL],
  max_tokens: MAX_OUTPUT,
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
  expect(request.promptTokens).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
  expect(toolPairing(request.messages)).toEqual({ unansweredCalls: [], orphanResults: [] });
}

describe('a request that finds a compaction running', () => {
  it('waits for it, bounded, and is served the compacted context', async () => {
    const client = api.client({ 'x-compactor-session': 'busy', ...windowHeaders });
    const before = api.upstream.requests.length;
    const { response } = await client.chat.completions.create(body(history(30, 'busy'))).withResponse();
    expect(response.headers.get('x-compactor-fit')).toBe('view');
    expect(api.upstream.requests.length - before).toBe(1);
    expectFits(before);
    expect((await compactionsOf('busy')).length).toBeGreaterThan(0);
  });

  it('past the bound, is served the read-time fit of the context at once', async () => {
    // Its own API with a short bound and a queue no worker reads: the compaction stays pending.
    const impatient = await buildServerOn(api.database.db, 'dropin-impatient', {
      dropIn: { openai: { baseURL: api.recorder.url, apiKey: 'stub' }, compactionWaitMs: 200 },
    });
    try {
      const before = api.upstream.requests.length;
      const response = await impatient.app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: {
          authorization: `Bearer ${TENANT_A_KEY}`,
          'x-compactor-session': 'impatient',
          ...windowHeaders,
        },
        payload: body(history(30, 'impatient')),
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
  it('is compacted away and retried once: the client gets the answer, streamed or not', async () => {
    for (const stream of [false, true]) {
      const session = `overflowing-${stream}`;
      // The provider's window is smaller than the session was told: the first call overflows.
      const client = api.client({
        'x-compactor-session': session,
        ...windowHeaders,
        'x-stub-context-window': '2800',
      });
      // Below the auto compaction's threshold, but not below the provider's window.
      const request = { ...body(history(8, session)), max_tokens: 256 };
      const before = api.upstream.requests.length;
      const answered = stream
        ? (await client.chat.completions.stream({ ...request, stream: true }).finalChatCompletion())
            .choices[0]!.message
        : (await client.chat.completions.create(request)).choices[0]!.message;
      // What the client got is the answer to the attempt that fitted.
      const fitted = api.recorder.answers.at(-1)!.body;
      const upstreamMessage = stream
        ? {
            content:
              sseChunks(fitted)
                .map((c) => c.choices[0]?.delta.content ?? '')
                .join('') || null,
          }
        : { content: (JSON.parse(fitted) as ChatCompletion).choices[0]!.message.content };
      expect(answered.content).toBe(upstreamMessage.content);
      const attempts = api.upstream.requests.slice(before);
      expect(attempts.map((r) => r.status)).toEqual([400, 200]);
      expect(attempts[1]!.promptTokens).toBeLessThan(attempts[0]!.promptTokens);
      const compactions = await compactionsOf(session);
      expect(compactions.map((c) => [c.reason, c.status])).toContainEqual(['overflow', 'completed']);
    }
  });

  it('that no compaction can resolve reaches the client as the provider said it', async () => {
    const client = api.client({
      'x-compactor-session': 'hopeless',
      ...windowHeaders,
      'x-stub-context-window': '1100',
    });
    const before = api.upstream.requests.length;
    const failure = await client.chat.completions
      .create(body(history(6, 'hopeless')))
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    expect(api.upstream.requests.slice(before).map((r) => r.status)).toEqual([400, 400]);
  });
});
