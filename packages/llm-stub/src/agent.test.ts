import { createHash } from 'node:crypto';
import { prunedOutputMarker } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { agentReply, newestClearedCallId, stubChecksum } from './agent';
import type { StubMessage, StubRequest } from './conversation';
import { stubMessage, toolPairing } from './conversation';

const user = (text: string): StubMessage => stubMessage('user', text);
const callMessage = (id: string, name: string, args: object, text = ''): StubMessage =>
  stubMessage('assistant', text, { toolCalls: [{ id, name, arguments: JSON.stringify(args) }] });
const toolMessage = (callId: string, output: string): StubMessage =>
  stubMessage('tool', output, { toolResults: [{ callId, output, isError: false }] });
/** An Anthropic user message carrying results (and maybe text). */
const resultsMessage = (results: Array<[string, string]>, text = ''): StubMessage =>
  stubMessage('user', text, {
    toolResults: results.map(([callId, output]) => ({ callId, output, isError: false })),
  });

const request = (messages: StubMessage[], toolNames = ['read', 'recall']): StubRequest => ({
  protocol: 'openai',
  model: 'stub',
  stream: false,
  maxTokens: null,
  includeUsage: false,
  messages,
  toolNames,
  thinkingEnabled: false,
});

describe('stubChecksum', () => {
  it('is the first 12 hex digits of the SHA-256 of the text', () => {
    const text = 'export const answer = 42;\n…ünïcødé';
    expect(stubChecksum(text)).toBe(createHash('sha256').update(text).digest('hex').slice(0, 12));
    expect(stubChecksum('a')).not.toBe(stubChecksum('b'));
  });
});

describe('agentReply', () => {
  it('answers a user text with a call to the first tool that is not recall', () => {
    const reply = agentReply(request([user('fix the bug')], ['recall', 'bash', 'read']), 1, 'call_');
    expect(reply?.toolCall).toMatchObject({ name: 'bash', arguments: '{"path":"file-1-1.ts"}' });
    expect(reply?.toolCall?.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(reply?.text).toBe('Looking at file-1-1.ts.');
  });

  it('numbers the path by the user turn and is the same for the same request', () => {
    const messages = [user('one'), stubMessage('assistant', 'done'), user('two')];
    const first = agentReply(request(messages), 1, 'toolu_');
    expect(first?.toolCall?.arguments).toBe('{"path":"file-2-1.ts"}');
    expect(agentReply(request(messages), 1, 'toolu_')).toEqual(first);
    expect(agentReply(request([user('other')]), 1, 'toolu_')?.toolCall?.id).not.toBe(first?.toolCall?.id);
  });

  it('answers a tool result with a text quoting its checksum', () => {
    const messages = [
      user('go'),
      callMessage('c1', 'read', { path: 'a.ts' }),
      toolMessage('c1', 'const a = 1;'),
    ];
    expect(agentReply(request(messages), 1, 'call_')).toEqual({
      text: `Tool result checksum: c1 ${stubChecksum('const a = 1;')}.`,
      toolCall: null,
    });
  });

  it('makes `steps` calls in a row before the text answer', () => {
    const messages: StubMessage[] = [user('go')];
    const calls: string[] = [];
    for (;;) {
      const reply = agentReply(request(messages), 3, 'call_');
      if (!reply?.toolCall) {
        expect(reply?.text).toContain(stubChecksum('output of file-1-3.ts'));
        break;
      }
      const path = (JSON.parse(reply.toolCall.arguments) as { path: string }).path;
      calls.push(path);
      messages.push(callMessage(reply.toolCall.id, reply.toolCall.name, { path }));
      messages.push(toolMessage(reply.toolCall.id, `output of ${path}`));
    }
    expect(calls).toEqual(['file-1-1.ts', 'file-1-2.ts', 'file-1-3.ts']);
  });

  it('reads Anthropic results in a user message, and its text does not start a new turn', () => {
    const messages = [user('go'), callMessage('t1', 'read', {}), resultsMessage([['t1', 'x']], 'reminder')];
    expect(agentReply(request(messages), 1, 'toolu_')?.text).toBe(
      `Tool result checksum: t1 ${stubChecksum('x')}.`,
    );
  });

  it('recalls the newest cleared output when the user asks to recall', () => {
    const messages = [
      user('read both'),
      callMessage('call_a', 'read', { path: 'a' }),
      toolMessage('call_a', prunedOutputMarker('call_a')),
      callMessage('call_b', 'read', { path: 'b' }),
      toolMessage('call_b', prunedOutputMarker('call_b')),
      stubMessage('assistant', 'Read both.'),
      user('Please recall what b said.'),
    ];
    const reply = agentReply(request(messages), 1, 'call_');
    expect(reply?.toolCall).toMatchObject({ name: 'recall', arguments: '{"callId":"call_b"}' });
    // Without the word, or without the recall tool, it works as usual.
    const noWord = [...messages.slice(0, -1), user('Please look at b again.')];
    expect(agentReply(request(noWord), 1, 'call_')?.toolCall?.name).toBe('read');
    expect(agentReply(request(messages, ['read']), 1, 'call_')?.toolCall?.name).toBe('read');
  });

  it('answers a recall result with the checksum of the recalled output', () => {
    const recalled = 'export const b = 2;';
    const messages = [
      user('read b'),
      callMessage('call_b', 'read', { path: 'b' }),
      toolMessage('call_b', prunedOutputMarker('call_b')),
      stubMessage('assistant', 'Read it.'),
      user('recall it'),
      callMessage('call_r', 'recall', { callId: 'call_b' }),
      toolMessage('call_r', recalled),
    ];
    expect(agentReply(request(messages), 5, 'call_')).toEqual({
      text: `Recalled output checksum: call_b ${stubChecksum(recalled)}.`,
      toolCall: null,
    });
  });

  it('does not apply without tools, with recall alone, or after an assistant message', () => {
    expect(agentReply(request([user('hi')], []), 1, 'call_')).toBeNull();
    expect(agentReply(request([user('hi')], ['recall']), 1, 'call_')).toBeNull();
    expect(agentReply(request([user('hi'), stubMessage('assistant', 'yes')]), 1, 'call_')).toBeNull();
  });
});

describe('newestClearedCallId', () => {
  it('finds the last marker, in text or in results, and ignores near misses', () => {
    expect(newestClearedCallId([user('[Old tool result content cleared - recall x]')])).toBeNull();
    const messages = [
      user(`see ${prunedOutputMarker('call_1')} and ${prunedOutputMarker('call_2')}`),
      resultsMessage([['t', prunedOutputMarker('toolu_3')]]),
    ];
    expect(newestClearedCallId(messages)).toBe('toolu_3');
    expect(newestClearedCallId(messages.slice(0, 1))).toBe('call_2');
  });
});

describe('toolPairing', () => {
  it.each<[string, StubMessage[], { unansweredCalls: string[]; orphanResults: string[] }]>([
    [
      'paired Chat calls',
      [user('go'), callMessage('a', 'read', {}), toolMessage('a', 'x')],
      { unansweredCalls: [], orphanResults: [] },
    ],
    [
      'paired Anthropic calls',
      [user('go'), callMessage('a', 'read', {}), resultsMessage([['a', 'x']])],
      { unansweredCalls: [], orphanResults: [] },
    ],
    [
      'a call with no result',
      [user('go'), callMessage('a', 'read', {}), user('next')],
      { unansweredCalls: ['a'], orphanResults: [] },
    ],
    [
      'a result with no call',
      [user('go'), toolMessage('a', 'x')],
      { unansweredCalls: [], orphanResults: ['a'] },
    ],
    [
      'a result after a text in between',
      [callMessage('a', 'read', {}), stubMessage('assistant', 'hm'), resultsMessage([['a', 'x']])],
      { unansweredCalls: ['a'], orphanResults: ['a'] },
    ],
    [
      'a call at the end',
      [user('go'), callMessage('a', 'read', {})],
      { unansweredCalls: ['a'], orphanResults: [] },
    ],
  ])('%s', (_name, messages, expected) => {
    expect(toolPairing(messages)).toEqual(expected);
  });
});
