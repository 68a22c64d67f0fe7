/**
 * The acceptance loop on Anthropic Messages: an agent on the official `@anthropic-ai/sdk`,
 * configured with only the base URL and a Compactor key, runs 200 tool-using model calls with
 * thinking at an 8k window against the LLM stub. Compactions happen on real workers while it
 * runs; the client never notices, and its thinking blocks go back with their signatures (the stub
 * refuses any other).
 */
import { describe, expect, it } from 'vitest';
import { toolPairing } from '@compactor/llm-stub';
import type { MessageCreateParams, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import {
  runAnthropicAgentLoop,
  sseEvents,
  type AnthropicLoopResult,
} from '../test-support/anthropic-agent-loop';
import { useAnthropicDropInApi, type AnthropicDropInApi } from '../test-support/anthropic-dropin-api';

const WINDOW = 8192;
const MAX_OUTPUT = 1024;
const CALLS = 200;
// The stub refuses what does not fit its window, as a provider does.
const api = useAnthropicDropInApi({ workers: true, upstream: { faults: { contextWindow: WINDOW } } });
const windowHeaders = {
  'x-compactor-context-window': String(WINDOW),
  'x-compactor-max-output-tokens': String(MAX_OUTPUT),
};

describe('a 200-call agent loop at an 8k window through the Anthropic SDK', () => {
  it('streaming, with the session header: every upstream prompt fits, the client sees the upstream answers, the session holds every message once', async () => {
    const result = await loop('loop-streamed', true);
    await expect(api.sessionIds()).resolves.toContain('loop-streamed');
    await expectStored(api, 'loop-streamed', result);
  });

  it('not streaming, with the session header: the same', async () => {
    const result = await loop('loop-whole', false);
    await expectStored(api, 'loop-whole', result);
  });

  it('without the session header: the loop lands in one session, found by its history', async () => {
    const before = await api.sessionIds();
    const result = await loop(undefined, true, 'headerless');
    const created = (await api.sessionIds()).filter((id) => !before.includes(id));
    expect(created).toHaveLength(1);
    await expectStored(api, created[0]!, result);
  });
});

/** Runs the loop and checks what the upstream got and what the client saw, call by call. */
async function loop(
  session: string | undefined,
  stream: boolean,
  project = session!,
): Promise<AnthropicLoopResult> {
  const firstRequest = api.upstream.requests.length;
  const firstAnswer = api.recorder.answers.length;
  const firstBody = api.recorder.requestBodies.length;
  const client = api.client(session === undefined ? {} : { 'x-compactor-session': session });
  const started = performance.now();
  const result = await runAnthropicAgentLoop(client, {
    calls: CALLS,
    stream,
    project,
    firstHeaders: windowHeaders,
  });
  console.info(`${CALLS} calls (stream: ${stream}) in ${Math.round(performance.now() - started)} ms`);

  const requests = api.upstream.requests.slice(firstRequest);
  // One upstream request per call: no overflow was ever retried, nothing was refused.
  expect(requests).toHaveLength(CALLS);
  for (const request of requests) {
    expect(request.protocol).toBe('anthropic');
    expect(request.status).toBe(200);
    expect(request.promptTokens).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
    expect(toolPairing(request.messages)).toEqual({ unansweredCalls: [], orphanResults: [] });
    expect(request.messages[0]).toMatchObject({ role: 'system', text: result.system });
  }
  // Compaction did happen: the late prompts are far shorter than the client's conversation.
  expect(requests.at(-1)!.messages.length).toBeLessThan(result.messages.length / 4);

  expectThinkingSentBack(result, api.recorder.requestBodies.slice(firstBody));

  const answers = api.recorder.answers.slice(firstAnswer);
  expect(answers).toHaveLength(CALLS);
  result.answers.forEach((seen, i) => {
    const upstream = answers[i]!;
    if (stream) expect(seen.events).toEqual(sseEvents(upstream.body));
    else expect(seen.message).toEqual(JSON.parse(upstream.body));
    expect(seen.message.content[0]).toMatchObject({ type: 'thinking', signature: expect.any(String) });
  });
  return result;
}

/**
 * The served context hands the model's thinking back as it came, signature and all (the stub
 * checks each against its own), and marks its newest user turns for the prompt cache.
 */
function expectThinkingSentBack(result: AnthropicLoopResult, bodies: string[]): void {
  const signed = new Map(
    result.answers.flatMap(({ message }) =>
      message.content.flatMap((block) =>
        block.type === 'thinking' ? [[block.signature, block.thinking] as const] : [],
      ),
    ),
  );
  let sentBack = 0;
  for (const body of bodies.map((text) => JSON.parse(text) as MessageCreateParams)) {
    expect(JSON.stringify(body.messages)).toContain('"cache_control":{"type":"ephemeral"}');
    for (const message of body.messages)
      for (const block of Array.isArray(message.content) ? message.content : [])
        if (block.type === 'thinking') {
          expect(signed.get(block.signature)).toBe(block.thinking);
          sentBack += 1;
        }
  }
  expect(sentBack).toBeGreaterThan(CALLS);
}

/** Every client message stored exactly once: tool results as the outputs of their calls, thinking with its signature. */
async function expectStored(
  api: AnthropicDropInApi,
  sessionId: string,
  result: AnthropicLoopResult,
): Promise<void> {
  const stored = (await api.history(sessionId)).filter((message) => !message.summary);
  const textOf = (message: (typeof stored)[number]) =>
    message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  // A user turn of tool results only adds no message: the results complete the stored calls.
  const client = result.messages.filter((message) => !onlyToolResults(message));
  expect(stored.map((message) => message.role)).toEqual(['system', ...client.map((message) => message.role)]);
  expect(textOf(stored[0]!)).toBe(result.system);
  client.forEach((message, i) => {
    const kept = stored[i + 1]!;
    if (message.role === 'user') expect(textOf(kept)).toBe(message.content);
    else {
      const blocks = message.content as { type: string; thinking?: string; signature?: string }[];
      const thinking = blocks.filter((block) => block.type === 'thinking');
      expect(kept.metadata['anthropic']).toMatchObject({
        thinking: thinking.map((block) => ({ thinking: block.thinking, signature: block.signature })),
      });
    }
  });

  const outputs = new Map(
    result.messages.flatMap((message) =>
      Array.isArray(message.content)
        ? message.content.flatMap((block) =>
            block.type === 'tool_result' ? [[block.tool_use_id, block.content as string] as const] : [],
          )
        : [],
    ),
  );
  const storedCalls = stored.flatMap((message) =>
    message.parts.flatMap((part) => (part.type === 'tool' ? [part] : [])),
  );
  expect(storedCalls.map((part) => part.callId).sort()).toEqual([...outputs.keys()].sort());
  for (const part of storedCalls) {
    expect(part.status).toBe('completed');
    expect(part.output).toBe(outputs.get(part.callId));
  }
}

function onlyToolResults(message: MessageParam): boolean {
  return Array.isArray(message.content) && message.content.every((block) => block.type === 'tool_result');
}
