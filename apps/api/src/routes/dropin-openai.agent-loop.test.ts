/**
 * The acceptance loop: an agent on the official `openai` SDK, configured with only the
 * base URL and a Compactor key, runs 200 tool-using model calls at an 8k window against the LLM
 * stub. Compactions happen on real workers while it runs; the client never notices.
 */
import { describe, expect, it } from 'vitest';
import { toolPairing } from '@compactor/llm-stub';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { runAgentLoop, sseChunks, type AgentLoopResult } from '../test-support/agent-loop';
import { useDropInApi, type DropInApi } from '../test-support/dropin-api';

const WINDOW = 8192;
const MAX_OUTPUT = 1024;
const CALLS = 200;
// The stub refuses what does not fit its window, as a provider does.
const api = useDropInApi({ workers: true, upstream: { faults: { contextWindow: WINDOW } } });
const windowHeaders = {
  'x-compactor-context-window': String(WINDOW),
  'x-compactor-max-output-tokens': String(MAX_OUTPUT),
};

describe('a 200-call agent loop at an 8k window through the openai SDK', () => {
  it('streaming, with the session header: every upstream prompt fits, the client sees the upstream answers, the session holds every message once', async () => {
    const result = await loop('loop-streamed', true);
    await expect(api.sessionIds()).resolves.toContain('loop-streamed');
    await expectStored(api, 'loop-streamed', result.messages);
  });

  it('not streaming, with the session header: the same', async () => {
    const result = await loop('loop-whole', false);
    await expectStored(api, 'loop-whole', result.messages);
  });

  it('without the session header: the loop lands in one session, found by its history', async () => {
    const before = await api.sessionIds();
    const result = await loop(undefined, false, 'headerless');
    const created = (await api.sessionIds()).filter((id) => !before.includes(id));
    expect(created).toHaveLength(1);
    await expectStored(api, created[0]!, result.messages);
  });
});

/** Runs the loop and checks what the upstream got and what the client saw, call by call. */
async function loop(
  session: string | undefined,
  stream: boolean,
  project = session!,
): Promise<AgentLoopResult> {
  const firstRequest = api.upstream.requests.length;
  const firstAnswer = api.recorder.answers.length;
  const client = api.client(session === undefined ? {} : { 'x-compactor-session': session });
  const started = performance.now();
  const result = await runAgentLoop(client, { calls: CALLS, stream, project, firstHeaders: windowHeaders });
  console.info(`${CALLS} calls (stream: ${stream}) in ${Math.round(performance.now() - started)} ms`);

  const requests = api.upstream.requests.slice(firstRequest);
  // One upstream request per call: no overflow was ever retried, nothing was refused.
  expect(requests).toHaveLength(CALLS);
  for (const request of requests) {
    expect(request.status).toBe(200);
    expect(request.promptTokens).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
    expect(toolPairing(request.messages)).toEqual({ unansweredCalls: [], orphanResults: [] });
  }
  // Compaction did happen: the late prompts are far shorter than the client's conversation.
  expect(requests.at(-1)!.messages.length).toBeLessThan(result.messages.length / 4);

  const answers = api.recorder.answers.slice(firstAnswer);
  expect(answers).toHaveLength(CALLS);
  result.answers.forEach((seen, i) => {
    const upstream = answers[i]!;
    if (stream) expect(seen.chunks).toEqual(sseChunks(upstream.body));
    else expect(seen.completion).toEqual(JSON.parse(upstream.body));
  });
  return result;
}

/** Every client message stored exactly once: tool results as the outputs of their calls. */
async function expectStored(
  api: DropInApi,
  sessionId: string,
  messages: ChatCompletionMessageParam[],
): Promise<void> {
  const stored = (await api.history(sessionId)).filter((message) => !message.summary);
  const textOf = (message: (typeof stored)[number]) =>
    message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  const client = messages.filter((message) => message.role !== 'tool');
  expect(stored.map((message) => message.role)).toEqual(client.map((message) => message.role));
  client.forEach((message, i) => {
    if (message.role !== 'assistant') expect(textOf(stored[i]!)).toBe(message.content);
  });

  const outputs = new Map(
    messages.flatMap((message) => (message.role === 'tool' ? [[message.tool_call_id, message.content]] : [])),
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
