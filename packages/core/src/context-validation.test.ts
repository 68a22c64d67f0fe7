import { describe, expect, it } from 'vitest';
import {
  validateContext,
  validateNativeContext,
  validateOpenAIMessages,
  type ContextIssue,
} from './context-validation';
import type { Message, ToolPart, ToolStatus } from './model';
import type { OpenAIChatMessage } from './openai-format';
import { message, text, toolPart } from './test-support/builders';

const tool = (callId: string, status?: ToolStatus): ToolPart => toolPart('read', 1, { callId, status });
const call = (id: string, args = '{}') => ({
  id,
  type: 'function' as const,
  function: { name: 'read', arguments: args },
});

describe('validateNativeContext', () => {
  it.each<[string, Message[], ContextIssue[]]>([
    [
      'a valid context',
      [
        message(1, 'assistant', [text('s')], { summary: true }),
        message(2, 'user', [text('q')]),
        message(3, 'assistant', [tool('a')]),
      ],
      [],
    ],
    [
      'a dangling call',
      [message(1, 'assistant', [tool('a', 'pending'), tool('b', 'running')])],
      [
        { kind: 'dangling-tool-call', index: 0, callId: 'a' },
        { kind: 'dangling-tool-call', index: 0, callId: 'b' },
      ],
    ],
    [
      'a duplicate call id',
      [message(1, 'assistant', [tool('a')]), message(2, 'assistant', [tool('a')])],
      [{ kind: 'duplicate-call-id', index: 1, callId: 'a' }],
    ],
    [
      'a summary after the kept messages',
      [message(1, 'user', [text('q')]), message(2, 'assistant', [text('s')], { summary: true })],
      [{ kind: 'summary-not-first', index: 1 }],
    ],
    [
      'pinned system instructions before the summary',
      [message(1, 'system', [text('Be terse.')]), message(2, 'assistant', [text('s')], { summary: true })],
      [],
    ],
  ])('%s', (_name, messages, expected) => {
    expect(validateNativeContext(messages)).toEqual(expected);
    expect(validateContext(messages)).toEqual(expected);
  });
});

describe('validateOpenAIMessages', () => {
  it.each<[string, OpenAIChatMessage[], ContextIssue[]]>([
    ['empty', [], []],
    [
      'a valid exchange',
      [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
        { role: 'tool', tool_call_id: 'b', content: 'x' },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'assistant', content: 'done' },
      ],
      [],
    ],
    [
      'starts with a tool result',
      [
        { role: 'system', content: 's' },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
      ],
      [
        { kind: 'starts-with-tool-result', index: 1 },
        { kind: 'orphaned-tool-result', index: 1, callId: 'a' },
      ],
    ],
    [
      'a result for a call of an earlier assistant message',
      [
        { role: 'assistant', content: null, tool_calls: [call('a')] },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'user', content: 'q' },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
      ],
      [{ kind: 'orphaned-tool-result', index: 3, callId: 'a' }],
    ],
    [
      'a result answered twice',
      [
        { role: 'assistant', content: null, tool_calls: [call('a')] },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
      ],
      [{ kind: 'orphaned-tool-result', index: 2, callId: 'a' }],
    ],
    [
      'a call never answered',
      [
        { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'user', content: 'q' },
      ],
      [{ kind: 'dangling-tool-call', index: 0, callId: 'b' }],
    ],
    [
      'a call unanswered at the end',
      [{ role: 'assistant', content: 'x', tool_calls: [call('a')] }],
      [{ kind: 'dangling-tool-call', index: 0, callId: 'a' }],
    ],
    [
      'a duplicate call id',
      [
        { role: 'assistant', content: null, tool_calls: [call('a')] },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'assistant', content: null, tool_calls: [call('a')] },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
      ],
      [{ kind: 'duplicate-call-id', index: 2, callId: 'a' }],
    ],
    [
      'arguments that are not a JSON object',
      [
        { role: 'assistant', content: null, tool_calls: [call('a', 'not json'), call('b', '[1]')] },
        { role: 'tool', tool_call_id: 'a', content: 'x' },
        { role: 'tool', tool_call_id: 'b', content: 'x' },
      ],
      [
        { kind: 'invalid-tool-arguments', index: 0, callId: 'a' },
        { kind: 'invalid-tool-arguments', index: 0, callId: 'b' },
      ],
    ],
    [
      'empty messages',
      [
        { role: 'user', content: ' ' },
        { role: 'user', content: [] },
        { role: 'assistant', content: null },
        { role: 'system', content: '' },
      ],
      [
        { kind: 'empty-message', index: 0 },
        { kind: 'empty-message', index: 1 },
        { kind: 'empty-message', index: 2 },
        { kind: 'empty-message', index: 3 },
      ],
    ],
  ])('%s', (_name, messages, expected) => {
    expect(validateOpenAIMessages(messages)).toEqual(expected);
    if (messages.length > 0) expect(validateContext(messages)).toEqual(expected);
  });
});
