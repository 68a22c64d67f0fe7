/**
 * Recall through the drop-in route: the model calls `recall` on an output compaction cleared,
 * Compactor answers the call itself with the stored original and asks the model again; the
 * client's answer (streamed or whole) carries no recall call, and nothing of it is stored.
 */
import { expect, it } from 'vitest';
import { prunedOutputMarker } from '@compactor/core';
import type { RecordedRequest } from '@compactor/llm-stub';
import type OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { READ_TOOL, runAgentLoop } from '../test-support/agent-loop';
import { useDropInApi } from '../test-support/dropin-api';

const api = useDropInApi({ workers: true });

const [MARKER_HEAD = '', MARKER_TAIL = ''] = prunedOutputMarker('\u0000').split('\u0000');

/** The call ids the prompt shows as cleared, newest last. */
function clearedIds(request: RecordedRequest): string[] {
  const texts = request.messages.flatMap((m) => [m.text, ...m.toolResults.map((r) => r.output)]);
  return texts.flatMap((text) =>
    text
      .split(MARKER_HEAD)
      .slice(1)
      .map((rest) => rest.slice(0, rest.indexOf(MARKER_TAIL))),
  );
}

/** A tool-using session whose old outputs are cleared soon (a small protected tail). */
async function sessionWithClearedOutputs(
  id: string,
): Promise<{ client: OpenAI; messages: ChatCompletionMessageParam[] }> {
  const created = await api.server.request('POST', '/v1/sessions', {
    id,
    model: { id: 'gpt-4o', contextWindow: 8192, maxOutputTokens: 1024 },
    policy: { pruning: { protectTokens: 1000, minimumTokens: 200 } },
  });
  expect(created.statusCode, created.body).toBe(201);
  const client = api.client({ 'x-compactor-session': id });
  const { messages } = await runAgentLoop(client, { calls: 30, stream: false, project: id });
  return { client, messages };
}

/** The newest call `request` shows cleared (the one the stub recalls), and its original output. */
function newestCleared(
  request: RecordedRequest,
  messages: ChatCompletionMessageParam[],
): { callId: string; output: string } {
  const callId = clearedIds(request).at(-1);
  expect(callId, 'the served context shows a cleared output').toBeDefined();
  const original = messages.find((m) => m.role === 'tool' && m.tool_call_id === callId);
  return { callId: callId!, output: original!.content as string };
}

it.each([true, false])(
  'stream %s: the model gets the original, the client sees no recall call, nothing of it is stored',
  async (stream) => {
    const session = `recalling-${stream}`;
    const { client, messages } = await sessionWithClearedOutputs(session);
    messages.push({ role: 'user', content: 'Please recall the cleared output.' });

    const before = api.upstream.requests.length;
    const body = { model: 'gpt-4o', messages, tools: [READ_TOOL], max_tokens: 1024 };
    const chunks: ChatCompletionChunk[] = [];
    const answer = stream
      ? await client.chat.completions
          .stream({ ...body, stream: true })
          .on('chunk', (c) => chunks.push(c))
          .finalChatCompletion()
      : await client.chat.completions.create(body);

    // Asked twice: the recall call, then again with Compactor's answer to it.
    const [first, second] = api.upstream.requests.slice(before);
    expect(api.upstream.requests.length - before).toBe(2);
    expect(first!.toolNames).toContain('recall');
    const cleared = newestCleared(first!, messages);
    const recallCall = second!.messages.at(-2)!.toolCalls;
    expect(recallCall.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['recall', { callId: cleared.callId }],
    ]);
    expect(second!.messages.at(-1)!.text).toContain(cleared.output);

    const message = answer.choices[0]!.message;
    expect(message.tool_calls ?? []).toEqual([]);
    expect(message.content).toContain(`Recalled output checksum: ${cleared.callId}`);
    expect(chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []))).toEqual([]);

    const stored = await api.history(session);
    expect(stored.flatMap((m) => m.parts).filter((p) => p.type === 'tool' && p.tool === 'recall')).toEqual(
      [],
    );
    const last = stored.at(-1)!;
    expect(last.role).toBe('assistant');
    expect(last.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')).toBe(message.content);
  },
);
