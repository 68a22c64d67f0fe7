/**
 * The recall tool end to end: a tool output pruned by a real prune job (workers running), the
 * context served with the tool's definition, and the model's recall calls executed by the client's
 * helper against the real recall route, down to what retention purged.
 */
import type {
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { applyRetentionPurge } from '@compactor/db';
import {
  CompactorApiError,
  INVALID_RECALL_ARGUMENTS,
  type OpenAITool,
  type OpenAIToolCall,
  type ToolCallLike,
} from '@compactor/client';
import { clearedOutputMarker, RECALL_TOOL } from '@compactor/contract';
import { useLiveApi } from './live-api';

const live = useLiveApi({ workers: true });

const PARSER_SOURCE = [
  'export function unquote(text: string): string {',
  '  // nested quotes are where the parser fails: the inner pair closes the outer one',
  "  return text.replace(/^'|'$/g, '');",
  '}',
].join('\n');

const recallCall = (id: string, args: unknown): OpenAIToolCall => ({
  id,
  type: 'function',
  function: { name: 'recall', arguments: typeof args === 'string' ? args : JSON.stringify(args) },
});

/** A session whose read of src/parser.ts a prune job has cleared from the context. */
async function prunedSession(id: string) {
  const client = live.client();
  // Prune everything a finished turn leaves behind; no auto compaction to move the boundary.
  await client.createSession({
    id,
    model: { id: 'gpt-4o' },
    policy: { auto: false, pruning: { protectTokens: 0, minimumTokens: 0, protectUserTurns: 0 } },
  });
  await client.appendMessages(id, [
    { role: 'user', parts: [{ type: 'text', text: 'Why do quoted arguments break?' }] },
    {
      role: 'assistant',
      parts: [
        {
          type: 'tool',
          callId: 'call_parser',
          tool: 'read',
          status: 'completed',
          input: { path: 'src/parser.ts' },
          output: PARSER_SOURCE,
        },
      ],
      finish: 'tool-calls',
    },
    { role: 'assistant', parts: [{ type: 'text', text: 'unquote() strips one pair only.' }], finish: 'stop' },
    { role: 'user', parts: [{ type: 'text', text: 'Fix it.' }] },
  ]);
  await client.prune(id);
  const marker = clearedOutputMarker('call_parser');
  for (let tries = 0; ; tries += 1) {
    const context = await client.getContext(id, { format: 'openai', tools: 'recall' });
    if (context.messages.some((m) => m.role === 'tool' && m.content === marker)) return { client, context };
    if (tries > 200) throw new Error(`the prune job did not clear call_parser: ${JSON.stringify(context)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the recall tool through the client', () => {
  it("fits the OpenAI SDK's types: the tool as a ChatCompletionTool, its tool calls as the helper's input", () => {
    expectTypeOf<OpenAITool>().toExtend<ChatCompletionTool>();
    expectTypeOf<ChatCompletionMessageFunctionToolCall>().toExtend<ToolCallLike>();
  });

  it('offers the tool with the context and gives a cleared output back by its call id', async () => {
    const { client, context } = await prunedSession('rc-call');
    expect(context.tools).toEqual([RECALL_TOOL]);
    expect(await client.getContext('rc-call', { format: 'openai' })).not.toHaveProperty('tools');

    const message = await client.executeRecallToolCall(
      'rc-call',
      recallCall('call_r1', { callId: 'call_parser' }),
    );
    expect(message).toEqual({
      role: 'tool',
      tool_call_id: 'call_r1',
      content: `Tool call "call_parser" (read) output:\n${PARSER_SOURCE}`,
    });
  });

  it('searches by words and names the cleared call each passage comes from', async () => {
    const { client } = await prunedSession('rc-search');
    // Right after the marker is served: the query finds the cleared output whether or not the
    // prune job has indexed its words yet.
    const found = await client.executeRecallToolCall(
      'rc-search',
      recallCall('call_r2', { query: 'nested quotes parser', limit: 3 }),
    );
    expect(found.tool_call_id).toBe('call_r2');
    const [head, first] = found.content.split('\n\n');
    expect(head).toMatch(
      /^Found [1-3] passage\(s\) for "nested quotes parser" in the history outside your context, best first:$/,
    );
    expect(first).toMatch(/^\[1\] seq 2, assistant, cleared output, read call "call_parser":\n/);
    expect(first).toContain('nested quotes are where the parser fails');

    const nothing = await client.executeRecallToolCall(
      'rc-search',
      recallCall('call_r3', { query: 'zeppelin' }),
    );
    expect(nothing.content).toBe('Nothing found for "zeppelin" in the history outside your context.');
  });

  it('tells the model what it got wrong instead of throwing', async () => {
    const { client } = await prunedSession('rc-wrong');
    const content = async (args: unknown) =>
      (await client.executeRecallToolCall('rc-wrong', recallCall('call_x', args))).content;

    expect(await content({ callId: 'call_nope' })).toBe(
      'No tool call "call_nope" is stored in this session: use the call id a cleared output\'s marker names.',
    );
    for (const args of [
      'not json',
      '',
      '[]',
      {},
      { callId: 'call_parser', query: 'parser' },
      { callId: 'call_parser', limit: 2 },
      { query: 'parser', limit: 21 },
      { query: 'parser', limit: 1.5 },
      { query: '' },
      { query: 'x'.repeat(501) },
      { query: 'parser', path: 'src' },
      // Passes the tool's schema; the API refuses it (a NUL cannot be searched for): still the model's doing.
      { query: 'par\u0000ser' },
    ]) {
      expect(await content(args), JSON.stringify(args)).toBe(INVALID_RECALL_ARGUMENTS);
    }
  });

  it('says when retention has purged the output', async () => {
    const { client } = await prunedSession('rc-purged');
    await applyRetentionPurge(live.api.database.db, {
      tenantId: 'tenant-a',
      createdBefore: new Date(Date.now() + 60_000),
    });
    const message = await client.executeRecallToolCall(
      'rc-purged',
      recallCall('call_r4', { callId: 'call_parser' }),
    );
    expect(message.content).toBe(
      'The output of tool call "call_parser" is no longer stored: retention has removed it.',
    );
  });

  it("throws for the caller's mistakes: another tool, a session that does not exist", async () => {
    const client = live.client();
    const read = { ...recallCall('call_r5', { path: 'a' }), function: { name: 'read', arguments: '{}' } };
    await expect(client.executeRecallToolCall('rc-none', read)).rejects.toThrow(TypeError);
    const missing = await client
      .executeRecallToolCall('rc-none', recallCall('call_r6', { query: 'parser' }))
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(CompactorApiError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
  });
});
