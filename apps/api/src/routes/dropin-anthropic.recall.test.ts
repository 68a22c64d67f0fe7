/**
 * Recall through `POST /v1/messages`: the model calls `recall` on an output compaction cleared,
 * Compactor answers the call itself with the stored original and asks the model again; the
 * client's answer (streamed or whole) carries no recall call, its stream stays one valid event
 * sequence, nothing of the call is stored, and the client's echo of the answer extends the session.
 */
import { expect, it } from 'vitest';
import { prunedOutputMarker } from '@compactor/core';
import type { RecordedRequest } from '@compactor/llm-stub';
import type Anthropic from '@anthropic-ai/sdk';
import type { Message, MessageParam, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { ANTHROPIC_READ_TOOL, runAnthropicAgentLoop } from '../test-support/anthropic-agent-loop';
import { useAnthropicDropInApi } from '../test-support/anthropic-dropin-api';

const api = useAnthropicDropInApi({ workers: true });

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
): Promise<{ client: Anthropic; system: string; messages: MessageParam[] }> {
  const created = await api.server.request('POST', '/v1/sessions', {
    id,
    model: { id: 'claude-sonnet-4-5', contextWindow: 8192, maxOutputTokens: 1024 },
    policy: { pruning: { protectTokens: 1000, minimumTokens: 200 } },
  });
  expect(created.statusCode, created.body).toBe(201);
  const client = api.client({ 'x-compactor-session': id });
  const { system, messages } = await runAnthropicAgentLoop(client, { calls: 30, stream: false, project: id });
  return { client, system, messages };
}

/** The newest cleared call `request` showed the model, and what its original output was. */
function newestCleared(
  request: RecordedRequest,
  messages: MessageParam[],
): { callId: string; output: string } {
  const callId = clearedIds(request).at(-1);
  expect(callId, 'the served context shows a cleared output').toBeDefined();
  const results = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  const original = results.find((b) => b.type === 'tool_result' && b.tool_use_id === callId);
  return { callId: callId!, output: (original as { content: string }).content };
}

it.each([true, false])(
  'stream %s: the model gets the original, the client sees no recall call, nothing of it is stored',
  async (stream) => {
    const session = `recalling-${stream}`;
    const { client, system, messages } = await sessionWithClearedOutputs(session);
    messages.push({ role: 'user', content: 'Please recall the cleared output.' });

    const before = api.upstream.requests.length;
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      system,
      messages,
      tools: [ANTHROPIC_READ_TOOL],
      thinking: { type: 'adaptive' as const },
    };
    const events: RawMessageStreamEvent[] = [];
    const answer: Message = stream
      ? await client.messages
          .stream(body)
          .on('streamEvent', (event) => events.push(structuredClone(event)))
          .finalMessage()
      : await client.messages.create(body);

    // Asked twice: the recall call, then again with Compactor's answer to it.
    const [first, second] = api.upstream.requests.slice(before);
    expect(api.upstream.requests.length - before).toBe(2);
    expect(first!.toolNames).toContain('recall');
    const cleared = newestCleared(first!, messages);
    const recallCall = second!.messages.at(-2)!.toolCalls;
    expect(recallCall.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['recall', { callId: cleared.callId }],
    ]);
    expect(second!.messages.at(-1)!.toolResults[0]!.output).toContain(cleared.output);

    expect(answer.content.filter((block) => block.type === 'tool_use')).toEqual([]);
    expect(answer.stop_reason).toBe('end_turn');
    const text = answer.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
    expect(text).toContain(`Recalled output checksum: ${cleared.callId}`);
    // Streamed, the client saw both steps, the second's blocks numbered on from the first's;
    // whole, the final step's message as the provider sent it.
    if (stream) expectOneSequence(events, answer);
    expect(answer.content.map((block) => block.type)).toEqual(
      stream ? ['thinking', 'text', 'thinking', 'text'] : ['thinking', 'text'],
    );
    if (!stream) expect(answer).toEqual(JSON.parse(api.recorder.answers.at(-1)!.body));

    const stored = await api.history(session);
    expect(stored.flatMap((m) => m.parts).filter((p) => p.type === 'tool' && p.tool === 'recall')).toEqual(
      [],
    );
    const last = stored.at(-1)!;
    expect(last.role).toBe('assistant');
    expect(last.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')).toBe(text);

    // The client echoes the answer as it got it (both steps' thinking, signed): the session goes on.
    const { response } = await client.messages
      .create({
        ...body,
        messages: [
          ...messages,
          { role: 'assistant', content: answer.content },
          { role: 'user', content: 'Thanks.' },
        ],
      })
      .withResponse();
    expect(response.headers.get('x-compactor-session')).toBe(session);
    expect(response.headers.get('x-compactor-diverged-from')).toBeNull();
  },
);

/** One message_start, blocks numbered 0…n-1 each started, filled and stopped in turn, one message_stop, no tool_use. */
function expectOneSequence(events: RawMessageStreamEvent[], answer: Message): void {
  const types = events.map((event) => event.type);
  expect(types.filter((type) => type === 'message_start')).toHaveLength(1);
  expect(types.filter((type) => type === 'message_delta')).toHaveLength(1);
  expect(types.at(-1)).toBe('message_stop');
  expect(types.filter((type) => type === 'message_stop')).toHaveLength(1);
  const starts = events.flatMap((event) => (event.type === 'content_block_start' ? [event] : []));
  expect(starts.map((event) => event.index)).toEqual(answer.content.map((_, i) => i));
  expect(starts.map((event) => event.content_block.type)).not.toContain('tool_use');
  let open = -1;
  for (const event of events) {
    if (event.type === 'content_block_start') open = event.index;
    if (event.type === 'content_block_delta' || event.type === 'content_block_stop')
      expect(event.index).toBe(open);
  }
}
