import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INTERRUPTED_TOOL_RESULT, prunedOutputMarker, type Message, type Part } from '../model';
import { buildSummaryMessages, COMPACTION_MARKER_TEXT } from '../summary-messages';
import { message, text, toolPart } from '../test-support/builders';
import {
  ANTHROPIC_CONTINUATION_TEXT,
  toAnthropicMessages,
  type AnthropicMessageParam,
} from './anthropic-render';

const reasoning = (value: string): Part => ({ type: 'reasoning', text: value, tokens: 1 });

describe('toAnthropicMessages', () => {
  it('renders finished, failed, pruned and unfinished calls as OpenAI rendering does', () => {
    const turn = message(2, 'assistant', [
      toolPart('read', 5, { callId: 'a', output: 'file a' }),
      toolPart('read', 5, { callId: 'b', status: 'error', error: 'ENOENT' }),
      toolPart('read', 5, { callId: 'c', compactedAt: '2026-01-01T00:00:00Z' }),
      toolPart('bash', 0, { callId: 'd', status: 'running', input: 'ls -la' }),
    ]);
    const { messages } = toAnthropicMessages({ messages: [message(1, 'user', [text('go')]), turn] });
    expect(messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'a', name: 'read', input: {} },
          { type: 'tool_use', id: 'b', name: 'read', input: {} },
          { type: 'tool_use', id: 'c', name: 'read', input: {} },
          { type: 'tool_use', id: 'd', name: 'bash', input: { input: 'ls -la' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: 'file a' },
          { type: 'tool_result', tool_use_id: 'b', content: 'ENOENT', is_error: true },
          { type: 'tool_result', tool_use_id: 'c', content: prunedOutputMarker('c') },
          { type: 'tool_result', tool_use_id: 'd', content: INTERRUPTED_TOOL_RESULT, is_error: true },
        ],
      },
    ]);
  });

  it('splits a turn at each text after tool calls and merges a following user message into the results', () => {
    const turn = message(2, 'assistant', [text('One.'), toolPart('read', 1, { callId: 'a' }), text('Two.')]);
    const { messages } = toAnthropicMessages({
      messages: [message(1, 'user', [text('go')]), turn, message(3, 'user', [text('next')])],
    });
    expect(messages.map((m) => [m.role, m.content.map((b) => b.type)])).toEqual([
      ['user', ['text']],
      ['assistant', ['text', 'tool_use']],
      ['user', ['tool_result']],
      ['assistant', ['text']],
      ['user', ['text']],
    ]);
  });

  it('sends thinking back only with its signature', () => {
    const turn = message(2, 'assistant', [reasoning('signed'), reasoning('unsigned'), text('Answer.')], {
      metadata: { anthropic: { thinking: [{ thinking: 'signed', signature: 'sig' }] } },
    });
    const { messages } = toAnthropicMessages({ messages: [message(1, 'user', [text('q')]), turn] });
    expect(messages[1]!.content).toEqual([
      { type: 'thinking', thinking: 'signed', signature: 'sig' },
      { type: 'text', text: 'Answer.' },
    ]);
  });

  it('ignores metadata of the wrong shape', () => {
    const turn = message(2, 'assistant', [reasoning('x'), text('Answer.')], {
      metadata: { anthropic: { thinking: 'sig', kept: [{ after: 0, block: 'oops' }], redacted: [1] } },
    });
    expect(
      toAnthropicMessages({ messages: [message(1, 'user', [text('q')]), turn] }).messages[1]!.content,
    ).toEqual([{ type: 'text', text: 'Answer.' }]);
  });

  it('joins the leading system messages into system; a later one is user text', () => {
    const { system, messages } = toAnthropicMessages({
      messages: [
        message(1, 'system', [text('Rule one.')]),
        message(2, 'system', [text('Rule two.')]),
        message(3, 'user', [text('go')]),
        message(4, 'system', [text('Late note.')]),
      ],
    });
    expect(system).toBe('Rule one.\n\nRule two.');
    expect(messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'go' },
          { type: 'text', text: 'Late note.' },
        ],
      },
    ]);
  });

  it.each(['opencode', 'user', 'opal', 'system'] as const)(
    'keeps alternation after a %s-style summary',
    (style) => {
      const summary = buildSummaryMessages({
        style,
        summaryText: 'We fixed a.ts.',
        compactionId: 'cmp_1',
        auto: true,
        messagesCompacted: 10,
        createdAt: '2026-01-01T00:00:00Z',
      }).map((m, i) => ({ ...m, seq: i + 1 }));
      const rest = [message(10, 'user', [text('next')]), message(11, 'assistant', [text('ok')])];
      const { system, messages } = toAnthropicMessages({ messages: [...summary, ...rest] });
      expectWellFormed(messages);
      const all = JSON.stringify({ system, messages });
      expect(all).toContain('We fixed a.ts.');
      if (style === 'opencode') expect(all).toContain(JSON.stringify(COMPACTION_MARKER_TEXT).slice(1, -1));
    },
  );

  it('opens with a user turn when the context starts with the model', () => {
    const { messages } = toAnthropicMessages({ messages: [message(1, 'assistant', [text('Hello.')])] });
    expect(messages[0]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: ANTHROPIC_CONTINUATION_TEXT }],
    });
  });
});

/** Anthropic's rules: user first, strict alternation, every tool_use answered first thing in the next user turn, ids unique. */
function expectWellFormed(messages: AnthropicMessageParam[]): void {
  if (messages.length === 0) return;
  expect(messages[0]!.role).toBe('user');
  const seen = new Set<string>();
  messages.forEach((m, i) => {
    expect(m.content.length).toBeGreaterThan(0);
    if (i > 0) expect(m.role).not.toBe(messages[i - 1]!.role);
    for (const block of m.content) {
      if (block.type === 'text') expect((block.text as string).trim()).not.toBe('');
    }
    const uses = m.content.filter((b) => b.type === 'tool_use') as { id: string; input: unknown }[];
    for (const use of uses) {
      expect(seen.has(use.id)).toBe(false);
      seen.add(use.id);
      expect(typeof use.input === 'object' && use.input !== null && !Array.isArray(use.input)).toBe(true);
    }
    const next = messages[i + 1];
    const results = (next?.content ?? []).filter((b) => b.type === 'tool_result') as {
      tool_use_id: string;
    }[];
    if (m.role === 'assistant') {
      expect(results.map((r) => r.tool_use_id)).toEqual(uses.map((u) => u.id));
      expect(next?.content.slice(0, results.length).every((b) => b.type === 'tool_result') ?? true).toBe(
        true,
      );
    }
    if (m.role === 'user' && i === 0) expect(m.content.some((b) => b.type === 'tool_result')).toBe(false);
  });
}

describe('toAnthropicMessages over any stored history', () => {
  const partArb: fc.Arbitrary<Part> = fc.oneof(
    fc.string().map((value) => text(value)),
    fc.string().map(reasoning),
    fc
      .record({
        callId: fc.constantFrom('call_0', 'call_1', 'toolu_x', 'a b', 'x'.repeat(60)),
        status: fc.constantFrom('pending', 'running', 'completed', 'error'),
        pruned: fc.boolean(),
        input: fc.constantFrom({}, { path: 'a' }, 'raw', null, [1, 2], '{"ok":true}'),
      })
      .map(({ callId, status, pruned, input }) =>
        toolPart('tool.name:x', 3, {
          callId,
          status,
          input,
          compactedAt: pruned && status === 'completed' ? '2026-01-01T00:00:00Z' : null,
          error: status === 'error' ? 'boom' : null,
        }),
      ),
    fc.constant<Part>({ type: 'compaction', auto: true, tokens: 1 }),
    fc.constantFrom<Part>(
      { type: 'file', mime: 'image/png', filename: null, url: 'data:image/png;base64,AAAA', tokens: 1 },
      { type: 'file', mime: 'application/zip', filename: 'a.zip', url: 'https://x/a.zip', tokens: 1 },
    ),
  );
  const historyArb = fc.array(
    fc.record({
      role: fc.constantFrom<Message['role']>('user', 'assistant', 'system'),
      parts: fc.array(partArb, { maxLength: 6 }),
    }),
    { maxLength: 12 },
  );

  it('always alternates from a user turn with every tool call paired', () => {
    fc.assert(
      fc.property(historyArb, (history) => {
        const messages = history.map((m, i) =>
          message(i + 1, m.role, m.role === 'assistant' ? m.parts : m.parts.filter((p) => p.type !== 'tool')),
        );
        expectWellFormed(toAnthropicMessages({ messages }).messages);
      }),
      { numRuns: 300 },
    );
  });
});
