import type {
  Message as AnthropicMessage,
  MessageParam,
} from '@anthropic-ai/sdk/resources/messages/messages';
import { describe, expect, it } from 'vitest';
import { anthropicAnswer, anthropicUsage } from './anthropic-answer';
import { anthropicElements } from './anthropic-elements';
import { toAnthropicMessages } from './anthropic-render';
import { chainHash } from './chain-hash';
import { storedMessages } from './test-support/stored-messages';
import { suffixWrites } from './suffix-writes';

const hashes = (system: unknown, messages: unknown) => anthropicElements(system, messages).map((e) => e.hash);

const response: AnthropicMessage = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  container: null,
  diagnostics: null,
  stop_details: null,
  stop_reason: 'tool_use',
  stop_sequence: null,
  content: [
    { type: 'thinking', thinking: 'I should read it.', signature: 'sig-A' },
    { type: 'redacted_thinking', data: 'opaque-1' },
    { type: 'text', text: 'Reading.', citations: null },
    { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'a.ts' }, caller: { type: 'direct' } },
  ],
  usage: {
    input_tokens: 20,
    output_tokens: 70,
    cache_read_input_tokens: 4000,
    cache_creation_input_tokens: 300,
    cache_creation: null,
    server_tool_use: null,
    service_tier: 'standard',
  } as AnthropicMessage['usage'],
};

const user: MessageParam = { role: 'user', content: 'Fix the test' };

describe('anthropicElements: what clients vary between turns hashes the same', () => {
  const rows: { name: string; a: [unknown, MessageParam[]]; b: [unknown, unknown[]] }[] = [
    {
      name: 'system string ≡ text blocks with moving cache breakpoints',
      a: ['Be brief.', [user]],
      b: [[{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }], [user]],
    },
    {
      name: 'string content ≡ one text block; cache_control anywhere is noise',
      a: [undefined, [user]],
      b: [
        undefined,
        [
          {
            role: 'user',
            content: [{ type: 'text', text: 'Fix the test', cache_control: { type: 'ephemeral' } }],
          },
        ],
      ],
    },
    {
      name: 'tool_result string content ≡ one text block; is_error false ≡ absent',
      a: [undefined, [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok' }] }]],
      b: [
        undefined,
        [
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't',
                is_error: false,
                content: [{ type: 'text', text: 'ok' }],
              },
            ],
          },
        ],
      ],
    },
    {
      name: 'a kept block with a null field ≡ without it',
      a: [
        undefined,
        [
          {
            role: 'assistant',
            content: [
              { type: 'server_tool_use', id: 's', name: 'web_search', input: {}, caller: null } as never,
            ],
          },
        ],
      ],
      b: [
        undefined,
        [
          {
            role: 'assistant',
            content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }],
          },
        ],
      ],
    },
    {
      name: 'no system ≡ an empty one',
      a: [undefined, [user]],
      b: ['', [user]],
    },
  ];
  it.each(rows)('$name', ({ a, b }) => {
    expect(hashes(...a)).toEqual(hashes(...b));
  });

  it('the echo of an answer hashes as the content the client pushes back', () => {
    const answer = anthropicAnswer(response);
    const [first] = hashes(undefined, [user]);
    const echoed: MessageParam[] = [user, { role: 'assistant', content: response.content }];
    expect(hashes(undefined, echoed)[1]).toBe(chainHash(first!, answer.echo));
  });

  it('thinking text, signatures and is_error are meaning', () => {
    const base = hashes(undefined, [user, { role: 'assistant', content: response.content }]);
    const resigned = response.content.map((b) => (b.type === 'thinking' ? { ...b, signature: 'sig-B' } : b));
    expect(hashes(undefined, [user, { role: 'assistant', content: resigned }])[1]).not.toBe(base[1]);
    const ok = hashes(undefined, [
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }] },
    ]);
    const failed = hashes(undefined, [
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'x', is_error: true }] },
    ]);
    expect(failed).not.toEqual(ok);
  });
});

describe('anthropicElements: the writes', () => {
  it('counts system as element 0 and splits a user message into its results and its text', () => {
    const elements = anthropicElements('Be brief.', [
      user,
      { role: 'assistant', content: response.content },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'export {}' }] },
          { type: 'text', text: 'Also check b.ts' },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_2', name: 'read', input: { path: 'b.ts' } }],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'denied', is_error: true }],
      },
    ]);
    expect(elements.map((e) => e.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(elements[3]!.toolResults).toEqual([{ callId: 'toolu_1', output: 'export {}', error: null }]);
    expect(elements[3]!.message!.parts).toEqual([{ type: 'text', text: 'Also check b.ts' }]);
    expect(elements[5]!.message).toBeNull();
    expect(elements[5]!.toolResults).toEqual([{ callId: 'toolu_2', output: null, error: 'denied' }]);
    expect(elements[2]!.message).toMatchObject({
      parts: [
        { type: 'reasoning', text: 'I should read it.' },
        { type: 'reasoning', text: '[redacted thinking]' },
        { type: 'text', text: 'Reading.' },
        { type: 'tool', callId: 'toolu_1', tool: 'read', status: 'pending', input: { path: 'a.ts' } },
      ],
      metadata: {
        anthropic: {
          thinking: [{ thinking: 'I should read it.', signature: 'sig-A' }],
          redacted: ['opaque-1'],
          kept: [],
        },
      },
    });
    const { appends, patches } = suffixWrites(elements, 0);
    expect(patches).toEqual([]);
    expect(appends[2]!.parts[3]).toMatchObject({ status: 'completed', output: 'export {}' });
    expect(appends[4]!.parts[0]).toMatchObject({ status: 'error', error: 'denied' });
  });

  it('keeps a block of its own that rides along with tool results', () => {
    const searchResult = {
      type: 'search_result',
      source: 'kb://1',
      title: 'Doc',
      content: [{ type: 'text', text: 'x' }],
    };
    const [element] = anthropicElements(undefined, [
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok' }, searchResult] },
    ]);
    expect(element!.message).toMatchObject({
      parts: [],
      metadata: { anthropic: { kept: [{ after: 0, block: searchResult }] } },
    });
  });

  it('sends a conversation back as it came: thinking signed, server blocks verbatim, images by source', () => {
    const serverUse = {
      type: 'server_tool_use',
      id: 'srvtoolu_1',
      name: 'web_search',
      input: { query: 'vitest' },
    };
    const serverResult = {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: [
        {
          type: 'web_search_result',
          url: 'https://vitest.dev',
          title: 'Vitest',
          encrypted_content: 'e',
          page_age: null,
        },
      ],
    };
    const conversation: MessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Search first.', signature: 'sig-1' },
          serverUse,
          serverResult,
          ...response.content.slice(2),
        ],
      } as MessageParam,
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'export {}' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
    ];
    const { appends } = suffixWrites(anthropicElements('Be brief.', conversation), 0);
    const rendered = toAnthropicMessages({ messages: storedMessages(appends) });
    expect(rendered.system).toBe('Be brief.');
    expect(rendered.messages).toEqual([
      conversation[0],
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Search first.', signature: 'sig-1' },
          serverUse,
          serverResult,
          { type: 'text', text: 'Reading.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'a.ts' } },
        ],
      },
      conversation[2],
      conversation[3],
    ]);
  });
});

describe('anthropicAnswer', () => {
  it('stores the content with tool parts pending, the stop reason and the usage', () => {
    const answer = anthropicAnswer(response);
    expect(answer.message).toMatchObject({
      role: 'assistant',
      finish: 'tool-calls',
      usage: { input: 20, output: 70, reasoning: 0, cacheRead: 4000, cacheWrite: 300 },
    });
    expect(answer.message.parts.map((p) => p.type)).toEqual(['reasoning', 'reasoning', 'text', 'tool']);
    expect(answer.usage).toEqual(answer.message.usage);
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['refusal', 'content-filter'],
    ['pause_turn', 'other'],
    [null, null],
  ])('stop_reason %s → finish %s', (stop, finish) => {
    expect(anthropicAnswer({ ...response, stop_reason: stop }).message.finish).toBe(finish);
  });

  it('maps usage with absent cache fields to zero, and no usage to null', () => {
    expect(anthropicUsage({ input_tokens: 5, output_tokens: 2 })).toEqual({
      input: 5,
      output: 2,
      reasoning: 0,
      cacheRead: 0,
      cacheWrite: 0,
    });
    expect(anthropicUsage(undefined)).toBeNull();
  });
});
