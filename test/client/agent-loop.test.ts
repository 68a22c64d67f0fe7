/**
 * The README's agent loop (examples/agent-loop.ts), run as written against the real API, real
 * workers and the LLM stub as the model: the conversation outgrows the model's window, the
 * provider refuses, the loop reports the overflow, waits for the compaction and carries on.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clearedOutputMarker, type OpenAIMessage, type OpenAITool } from '@compactor/client';
import { runAgent, type Reply } from '../../packages/client/examples/agent-loop';
import { useLiveApi } from './live-api';

const live = useLiveApi({ workers: true });

/** A user turn of roughly `tokens` tokens. */
const turn = (i: number, tokens: number) =>
  `Turn ${i}: please review this log. ` + Array.from({ length: tokens }, (_, j) => `w${i}x${j}`).join(' ');

describe('examples/agent-loop.ts', () => {
  it('appends every turn, reports the overflow, retries after the compaction and finishes', async () => {
    const client = live.client();
    // Compactor knows the model's window as 8,000 tokens (summaries of at most 1,000); the
    // provider (the stub, told by a header) refuses prompts over 2,000 of its tokens: an overflow
    // the auto trigger cannot see coming. (The stub counts these turns at about 40 % of
    // Compactor's exact count, and the estimate never drops below that count: at 3,000 the auto
    // trigger, near 6,000 exact tokens, came first.)
    await client.createSession({
      id: 'agent-1',
      model: { id: 'gpt-4o', contextWindow: 8000 },
      policy: { summarizer: { maxOutputTokens: 1000 } },
    });
    const run = await runAgent({
      client,
      llm: {
        baseUrl: live.stub.url,
        apiKey: 'stub',
        model: 'gpt-4o',
        headers: { 'x-stub-context-window': '2000' },
      },
      sessionId: 'agent-1',
      userTurns: Array.from({ length: 8 }, (_, i) => turn(i, 180)),
    });

    expect(run.replies).toHaveLength(8);
    expect(run.overflowCompactions.length).toBeGreaterThan(0);
    for (const id of run.overflowCompactions) {
      expect(await client.getCompaction(id)).toMatchObject({ reason: 'overflow', status: 'completed' });
    }
    const history = await client.listMessages('agent-1', { limit: 1000 });
    const written = history.messages.filter((m) => !m.summary);
    expect(written.filter((m) => m.role === 'user')).toHaveLength(8);
    expect(written.filter((m) => m.role === 'assistant')).toHaveLength(8);
    const context = await client.getContext('agent-1');
    expect(context.compactionId).not.toBeNull();
  });

  it("executes the model's recall call and gives it back what a prune cleared", async () => {
    const client = live.client();
    await client.createSession({
      id: 'agent-recall',
      model: { id: 'gpt-4o' },
      policy: { auto: false, pruning: { protectTokens: 0, minimumTokens: 0, protectUserTurns: 0 } },
    });
    const log = 'FAIL test/parser.test.ts > nested quotes';
    await client.appendMessages('agent-recall', [
      { role: 'user', parts: [{ type: 'text', text: 'Run the tests.' }] },
      {
        role: 'assistant',
        parts: [
          {
            type: 'tool',
            callId: 'call_log',
            tool: 'bash',
            status: 'completed',
            input: { command: 'npm test' },
            output: log,
          },
        ],
        finish: 'tool-calls',
      },
      { role: 'assistant', parts: [{ type: 'text', text: 'One fails.' }], finish: 'stop' },
    ]);
    await client.prune('agent-recall');
    const marker = clearedOutputMarker('call_log');
    for (let tries = 0; ; tries += 1) {
      const { messages } = await client.getContext('agent-recall', { format: 'openai' });
      if (messages.some((m) => m.role === 'tool' && m.content === marker)) break;
      expect(tries, 'the prune job cleared call_log').toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const prompts: Array<{ messages: OpenAIMessage[]; tools: OpenAITool[] }> = [];
    const model = async (messages: OpenAIMessage[], tools: OpenAITool[]): Promise<Reply> => {
      prompts.push({ messages, tools });
      const usage = { input: 60, output: 9 };
      if (prompts.length > 1) return { text: 'The parser fails on nested quotes.', toolCalls: [], usage };
      const args = JSON.stringify({ callId: 'call_log' });
      const call = { id: 'call_r', type: 'function' as const, function: { name: 'recall', arguments: args } };
      return { text: '', toolCalls: [call], usage };
    };
    const run = await runAgent({
      client,
      llm: { baseUrl: live.stub.url, apiKey: 'stub', model: 'gpt-4o' },
      sessionId: 'agent-recall',
      userTurns: ['Which test failed?'],
      model,
    });

    expect(run.replies).toEqual(['The parser fails on nested quotes.']);
    expect(prompts[0]!.tools.map((tool) => tool.function.name)).toEqual(['recall']);
    expect(prompts[1]!.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'call_r',
      content: `Tool call "call_log" (bash) output:\n${log}`,
    });
    const history = await client.listMessages('agent-recall');
    expect(history.messages.at(-2)).toMatchObject({ role: 'assistant', finish: 'tool-calls' });
    expect(history.messages.at(-2)!.parts[0]).toMatchObject({
      tool: 'recall',
      input: { callId: 'call_log' },
    });
  });

  it('is what the README quotes', () => {
    const readme = readFileSync(new URL('../../packages/client/README.md', import.meta.url), 'utf8');
    const example = readFileSync(
      new URL('../../packages/client/examples/agent-loop.ts', import.meta.url),
      'utf8',
    );
    expect(
      readme.includes(`\`\`\`ts\n${example}\`\`\``),
      'README.md quotes examples/agent-loop.ts verbatim',
    ).toBe(true);
  });
});
