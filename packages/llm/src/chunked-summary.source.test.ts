import { estimateTokens, serializeTranscript, type Message } from '@compactor/core';
import { assistant, conversation, text, toolCall, user } from '@compactor/core/testing';
import { describe, expect, it } from 'vitest';
import type { SummarizerSettings } from './chunked-summary';
import { createLlm } from './llm';
import { arraySource, type MessageSource } from './message-source';
import { stubConfig, useLlmStub } from './test-support/stub';

const stub = useLlmStub();

const WINDOW = 6000;
const settings: SummarizerSettings = {
  model: 'stub-summarizer',
  maxOutputTokens: 1500,
  timeoutMs: 10_000,
  contextWindow: WINDOW,
  toolResultMaxChars: 2000,
  toolArgsMaxChars: 1000,
};

/** A long session: a goal, then turns that each read a file and edit it. */
function longSession(turns: number): Message[] {
  const messages: Message[] = [
    user('Build the invoice exporter. Never use floating point for money amounts.'),
  ];
  for (let turn = 1; turn < turns; turn += 1) {
    messages.push(
      user(`Continue with step ${turn}.`),
      assistant([
        text(`Looking at module ${turn}.`),
        toolCall('read', { path: `src/module-${turn}.ts` }, `// module ${turn}\n`.repeat(80)),
        toolCall('edit', { path: `src/module-${turn}.ts`, old: 'a', new: 'b' }, 'applied'),
      ]),
    );
  }
  return conversation(messages);
}

/** `messages` as a source of `size`-message windows that records what it was asked for. */
function recordingSource(messages: Message[], size: number) {
  const inner = arraySource(messages, size);
  const reads = { windows: 0, largest: 0, messages: 0 };
  const source: MessageSource = {
    length: messages.length,
    async *windows(from) {
      for await (const window of inner.windows(from)) {
        reads.windows += 1;
        reads.largest = Math.max(reads.largest, window.length);
        reads.messages += window.length;
        yield window;
      }
    },
  };
  return { source, reads };
}

/** The prompts the stub received since request `from`. */
const promptsSince = (from: number) =>
  stub()
    .requests.slice(from)
    .map((r) => r.messages.map((m) => m.text).join('\n---\n'));

describe('a summarizer input read window by window', () => {
  const session = longSession(120);

  it('is sent exactly as the same messages given as an array, reading each window about once', async () => {
    expect(estimateTokens(serializeTranscript(session, settings))).toBeGreaterThan(5 * WINDOW);
    stub().setFaults({ contextWindow: WINDOW });
    const llm = createLlm(stubConfig(stub(), { countTokens: estimateTokens }));

    const before = stub().requests.length;
    const whole = await llm.summarizeMessages({ messages: session, settings });
    const wholePrompts = promptsSince(before);

    const { source, reads } = recordingSource(session, 8);
    const middle = stub().requests.length;
    const streamed = await llm.summarizeMessages({ messages: source, settings });

    expect(streamed.text).toBe(whole.text);
    expect(streamed.chunks).toBe(whole.chunks);
    expect(whole.chunks).toBeGreaterThan(3);
    expect(promptsSince(middle)).toEqual(wholePrompts);
    expect(reads.largest).toBeLessThanOrEqual(8);
    // The stored-token total (no hint given) and the chunks: each message read about twice.
    expect(reads.messages).toBeLessThanOrEqual(2 * session.length + 3 * 8);
  });

  it('counts message by message only as far as a request reaches, never the whole transcript', async () => {
    stub().setFaults({ contextWindow: WINDOW });
    const counted: number[] = [];
    const countTokens = (text: string) => {
      counted.push(text.length);
      return estimateTokens(text);
    };
    const llm = createLlm(stubConfig(stub(), { countTokens }));
    const { source } = recordingSource(session, 8);
    const result = await llm.summarizeMessages({ messages: source, settings });

    expect(result.chunks).toBeGreaterThan(3);
    // Nothing counted is longer than a request can be (about 4 characters a token).
    expect(Math.max(...counted)).toBeLessThan(WINDOW * 4);
    const transcriptChars = serializeTranscript(session, settings).length;
    expect(Math.max(...counted)).toBeLessThan(transcriptChars / 4);
  });
});
