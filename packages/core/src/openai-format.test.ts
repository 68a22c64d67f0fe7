import { describe, expect, it } from 'vitest';
import { assembleContext } from './context';
import { validateContext } from './context-validation';
import { INTERRUPTED_TOOL_RESULT, type Message, type Part, type ToolPart } from './model';
import {
  openAIToolCallId,
  openAIToolName,
  toOpenAIMessages,
  toolCallArguments,
  toolResultContent,
} from './openai-format';
import { buildSummaryMessages, COMPACTION_MARKER_TEXT } from './summary-messages';
import { message, text, toolPart, type ToolPartOptions } from './test-support/builders';

/** A completed read of `<callId>.ts`. */
const tool = (callId: string, options: ToolPartOptions = {}): ToolPart =>
  toolPart('read', 5, {
    callId,
    input: { path: `${callId}.ts` },
    output: `contents of ${callId}`,
    ...options,
  });

describe('toOpenAIMessages', () => {
  it('splits an assistant turn into steps: assistant(content, tool_calls) → tool … → assistant', () => {
    const turn = message(2, 'assistant', [
      { type: 'reasoning', text: 'plan', tokens: 1 },
      text('Reading two files.'),
      tool('a'),
      tool('b'),
      text('Now the third.'),
      tool('c'),
      text('Done.'),
    ]);
    expect(toOpenAIMessages([message(1, 'user', [text('go')]), turn])).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: 'Reading two files.',
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } },
          { id: 'b', type: 'function', function: { name: 'read', arguments: '{"path":"b.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: 'contents of a' },
      { role: 'tool', tool_call_id: 'b', content: 'contents of b' },
      {
        role: 'assistant',
        content: 'Now the third.',
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'read', arguments: '{"path":"c.ts"}' } }],
      },
      { role: 'tool', tool_call_id: 'c', content: 'contents of c' },
      { role: 'assistant', content: 'Done.' },
    ]);
  });

  it('a step that starts with a tool call has null content; several texts join', () => {
    expect(toOpenAIMessages([message(1, 'assistant', [tool('a'), text('One.'), text('Two.')])])).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } }],
      },
      { role: 'tool', tool_call_id: 'a', content: 'contents of a' },
      { role: 'assistant', content: 'One.\n\nTwo.' },
    ]);
  });

  it('renders pruned, failed and unfinished calls so every call has its answer', () => {
    const out = toOpenAIMessages([
      message(1, 'assistant', [
        tool('p', { compactedAt: '2025-01-01T00:00:00Z' }),
        tool('e', { status: 'error', output: null, error: 'ENOENT' }),
        tool('r', { status: 'running', output: null }),
        tool('n', { output: '' }),
      ]),
    ]);
    expect(out.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', tool_call_id: 'p', content: '[Old tool result content cleared — recall p]' },
      { role: 'tool', tool_call_id: 'e', content: 'ENOENT' },
      { role: 'tool', tool_call_id: 'r', content: INTERRUPTED_TOOL_RESULT },
      { role: 'tool', tool_call_id: 'n', content: '(no output)' },
    ]);
    expect(validateContext(out)).toEqual([]);
  });

  it('user files: images as image_url parts, other files as a note; system stays system', () => {
    const out = toOpenAIMessages([
      message(1, 'system', [
        text('You are terse.'),
        { type: 'file', mime: 'text/plain', filename: 'rules.txt', url: 'u', tokens: 1 },
      ]),
      message(2, 'user', [
        text('What is in this picture?'),
        { type: 'file', mime: 'image/png', filename: 'x.png', url: 'data:image/png;base64,AAA', tokens: 1 },
        { type: 'file', mime: 'application/pdf', filename: null, url: 'https://x/doc.pdf', tokens: 1 },
      ]),
      message(3, 'user', [
        { type: 'file', mime: 'application/pdf', filename: 'spec.pdf', url: 'u', tokens: 1 },
      ]),
    ]);
    expect(out).toEqual([
      { role: 'system', content: 'You are terse.\n\n[Attached file: rules.txt (text/plain)]' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAA' } },
          { type: 'text', text: '[Attached file: unnamed (application/pdf)]' },
        ],
      },
      { role: 'user', content: '[Attached file: spec.pdf (application/pdf)]' },
    ]);
  });

  it('renders the OpenCode compaction marker as a system note, not a user question', () => {
    const written = buildSummaryMessages({
      style: 'opencode',
      summaryText: '## Goal\nShip it.',
      compactionId: 'c1',
      auto: true,
      messagesCompacted: 10,
      createdAt: '2025-01-01T00:00:00Z',
    }).map((m, i) => ({ ...m, seq: 100 + i }));
    const context = assembleContext(
      [message(1, 'user', [text('old')]), ...written, message(5, 'user', [text('next')])],
      [
        {
          id: 'c1',
          status: 'completed',
          boundarySeq: 5,
          summaryMessageIds: written.map((m) => m.id),
          finishedAt: '2025-01-01T00:00:00Z',
        },
      ],
    );
    const out = toOpenAIMessages(context);
    expect(out).toEqual([
      { role: 'user', content: COMPACTION_MARKER_TEXT },
      { role: 'assistant', content: '## Goal\nShip it.' },
      { role: 'user', content: 'next' },
    ]);
    expect(COMPACTION_MARKER_TEXT).not.toMatch(/what did we do so far/i);
    expect(COMPACTION_MARKER_TEXT).toMatch(/not a request from the user/);
  });

  it('drops messages with nothing to send, and tool parts outside assistant messages become notes', () => {
    const out = toOpenAIMessages([
      message(1, 'user', [text('  ')]),
      message(2, 'assistant', [{ type: 'reasoning', text: 'only thinking', tokens: 1 }]),
      message(3, 'system', []),
      message(4, 'user', [tool('u')]),
      message(5, 'assistant', [
        { type: 'file', mime: 'image/png', filename: 'chart.png', url: 'u', tokens: 1 },
      ]),
    ]);
    expect(out).toEqual([
      { role: 'user', content: '[Tool call read({"path":"u.ts"}) returned: contents of u]' },
      { role: 'assistant', content: '[Attached file: chart.png (image/png)]' },
    ]);
  });
});

describe('toolCallArguments', () => {
  it.each([
    [{ path: 'a' }, '{"path":"a"}'],
    [undefined, '{}'],
    [null, '{}'],
    ['{"path":"a"}', '{"path":"a"}'],
    ['*** Begin Patch', '{"input":"*** Begin Patch"}'],
    ['[1,2]', '{"input":"[1,2]"}'],
    [42, '{"input":42}'],
    [['a'], '{"input":["a"]}'],
  ])('%j → %s', (input, expected) => {
    expect(toolCallArguments(input)).toBe(expected);
  });

  it('still gives an object for what JSON cannot hold', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = cyclic;
    expect(toolCallArguments(cyclic)).toBe('{"input":"[object Object]"}');
    expect(toolCallArguments(10n)).toBe('{"input":"10"}');
    expect(toolCallArguments(10n, { format: 'display' })).toBe('10');
  });

  // The display format is the one transcripts, detector prompts and shrinking share.
  it.each([
    [{ path: 'a' }, '{"path":"a"}'],
    [undefined, ''],
    [null, ''],
    ['*** Begin Patch', '*** Begin Patch'],
    [42, '42'],
    [['a'], '["a"]'],
  ])('display: %j → %s', (input, expected) => {
    expect(toolCallArguments(input, { format: 'display' })).toBe(expected);
  });
});

describe('toolResultContent', () => {
  it.each<[ToolPartOptions, string]>([
    [{ status: 'completed', output: 'x' }, 'x'],
    [{ status: 'error', output: null, error: null }, 'Tool error'],
    [{ status: 'pending', output: null, error: null }, ''],
  ])('%j', (extra, expected) => {
    expect(toolResultContent(tool('a', extra))).toBe(expected);
  });
});

describe('data the types rule out (e.g. a newer row read by an older worker)', () => {
  it('throws instead of sending something the provider would misread', () => {
    const weirdPart = { type: 'weird', tokens: 1 } as unknown as Part;
    expect(() => toOpenAIMessages([message(1, 'user', [weirdPart])])).toThrow('unexpected part');
    expect(() => toOpenAIMessages([message(1, 'tool' as Message['role'], [text('x')])])).toThrow(
      'unexpected role',
    );
    expect(() => toolResultContent(tool('a', { status: 'weird' as ToolPart['status'] }))).toThrow(
      'unexpected tool status',
    );
  });
});

describe('names and ids OpenAI accepts', () => {
  it.each([
    ['read', 'read'],
    ['github-mcp-server-search_code', 'github-mcp-server-search_code'],
    ['mcp.server/tool', 'mcp_server_tool'],
    ['ask user', 'ask_user'],
    ['x'.repeat(80), 'x'.repeat(64)],
    ['', 'tool'],
  ])('tool name %j → %j', (name, expected) => {
    expect(openAIToolName(name)).toBe(expected);
    expect(openAIToolName(name)).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it.each(['call_1', 'toolu_01CVcT4Gi5NLamLa9yJbUats', 'a'.repeat(40)])('keeps the valid id %s', (id) => {
    expect(openAIToolCallId(id)).toBe(id);
  });

  it.each(['a'.repeat(41), 'functions.read:0', 'call 7', ''])(
    'maps the id %j to a valid, stable one',
    (id) => {
      const mapped = openAIToolCallId(id);
      expect(mapped).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
      expect(openAIToolCallId(id)).toBe(mapped);
    },
  );

  it('makes ids reused across turns unique, on each call and its result (Anthropic rejects duplicates)', () => {
    const turn = (seq: number, callId: string, path: string): Message =>
      message(seq, 'assistant', [tool(callId, { input: { path } })], { finish: 'tool-calls' });
    const messages = [
      message(1, 'user', [text('read three files')]),
      turn(2, 'call_0', 'a.ts'),
      turn(3, 'call_0', 'b.ts'),
      turn(4, 'call_0', 'c.ts'),
      turn(5, 'functions.read:0', 'd.ts'),
      turn(6, 'functions.read:0', 'e.ts'),
    ];
    const rendered = toOpenAIMessages(messages);
    expect(validateContext(rendered)).toEqual([]);
    const pairs = rendered.flatMap((m, i) =>
      m.role === 'assistant' && m.tool_calls
        ? [[m.tool_calls[0]?.id, (rendered[i + 1] as { tool_call_id: string }).tool_call_id]]
        : [],
    );
    const ids = pairs.map(([call]) => call);
    expect(pairs.every(([call, result]) => call === result)).toBe(true);
    expect(new Set(ids).size).toBe(5);
    // The first keeps its id; the others are derived from it, valid and stable.
    expect(ids[0]).toBe('call_0');
    expect(ids[1]).toMatch(/^call_0_2_[0-9a-f]{8}$/);
    expect(ids[2]).toMatch(/^call_0_3_[0-9a-f]{8}$/);
    expect(ids[3]).toBe(openAIToolCallId('functions.read:0'));
    expect(ids.every((id) => /^[a-zA-Z0-9_-]{1,40}$/.test(id ?? ''))).toBe(true);
    expect(toOpenAIMessages(messages)).toEqual(rendered);
    // Within one message too.
    const twice = toOpenAIMessages([
      message(1, 'user', [text('go')]),
      message(2, 'assistant', [tool('call_1'), tool('call_1')]),
    ]);
    expect(validateContext(twice)).toEqual([]);
  });

  it('a generated id that a later call really uses is not handed out twice', () => {
    const derived = toOpenAIMessages([
      message(1, 'user', [text('go')]),
      message(2, 'assistant', [tool('call_0'), tool('call_0')]),
    ]).flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : []))[1] as string;
    const rendered = toOpenAIMessages([
      message(1, 'user', [text('go')]),
      message(2, 'assistant', [tool('call_0'), tool('call_0'), tool(derived)]),
    ]);
    expect(validateContext(rendered)).toEqual([]);
  });

  it('keeps long-id calls paired with their results', () => {
    const longId = `functions.read:${'9'.repeat(50)}`;
    const rendered = toOpenAIMessages([
      {
        id: 'a',
        seq: 1,
        role: 'assistant',
        parts: [
          {
            type: 'tool',
            callId: longId,
            tool: 'fs.read',
            status: 'completed',
            input: { path: 'a' },
            output: 'ok',
            error: null,
            compactedAt: null,
            tokens: 3,
            outputTokens: 1,
          },
        ],
        finish: 'tool-calls',
        error: null,
        usage: null,
        createdAt: '2026-01-01T00:00:00.000Z',
        metadata: {},
        summary: false,
        compactionId: null,
      },
    ]);
    const [call, result] = rendered as unknown as [
      { tool_calls: { id: string; function: { name: string } }[] },
      { tool_call_id: string },
    ];
    expect(call.tool_calls[0]?.function.name).toBe('fs_read');
    expect(result.tool_call_id).toBe(call.tool_calls[0]?.id);
    expect(validateContext(rendered)).toEqual([]);
  });
});
