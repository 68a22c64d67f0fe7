import type {
  ChatCompletion,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions/completions';
import { describe, expect, it } from 'vitest';
import { chainHash } from './chain-hash';
import { DropInInputError } from './input-error';
import { openAIAnswer, openAIUsage } from './openai-answer';
import { openAIChatElements } from './openai-elements';

const hashes = (messages: unknown) => openAIChatElements(messages).map((element) => element.hash);

const completion = (message: ChatCompletion['choices'][number]['message']): ChatCompletion => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-4o',
  choices: [{ index: 0, finish_reason: 'tool_calls', logprobs: null, message }],
  usage: {
    prompt_tokens: 1200,
    completion_tokens: 80,
    total_tokens: 1280,
    prompt_tokens_details: { cached_tokens: 1024 },
    completion_tokens_details: { reasoning_tokens: 30 },
  },
});

const answered = completion({
  role: 'assistant',
  content: 'Reading it.',
  refusal: null,
  annotations: [],
  tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } }],
});

describe('openAIChatElements: what clients vary between turns hashes the same', () => {
  const user: ChatCompletionMessageParam = { role: 'user', content: 'Fix the test' };
  const rows: { name: string; a: ChatCompletionMessageParam[]; b: unknown[] }[] = [
    {
      name: 'string content ≡ one text part',
      a: [{ role: 'user', content: 'Fix the test' }],
      b: [{ role: 'user', content: [{ type: 'text', text: 'Fix the test' }] }],
    },
    {
      name: 'assistant content null ≡ absent ≡ "" ≡ []',
      a: [user, { role: 'assistant', content: null, tool_calls: answered.choices[0]!.message.tool_calls! }],
      b: [
        user,
        {
          role: 'assistant',
          content: '',
          tool_calls: answered.choices[0]!.message.tool_calls!.map((c) => ({ ...c })),
        },
      ],
    },
    {
      name: 'refusal: null, annotations, audio: null and a stream index are noise',
      a: [
        user,
        {
          role: 'assistant',
          content: 'ok',
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'ls', arguments: '{}' } }],
        },
      ],
      b: [
        user,
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'ok' }],
          refusal: null,
          annotations: [],
          audio: null,
          tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'ls', arguments: '{}' } }],
        },
      ],
    },
    {
      name: 'reasoning_content is left out (clients differ on sending it back)',
      a: [user, { role: 'assistant', content: 'done' }],
      b: [user, { role: 'assistant', content: 'done', reasoning_content: 'thought about it' }],
    },
    {
      name: 'tool content string ≡ text parts; key order is irrelevant',
      a: [user, { role: 'tool', tool_call_id: 'c', content: 'out' }],
      b: [user, { content: [{ text: 'out', type: 'text' }], tool_call_id: 'c', role: 'tool' }],
    },
  ];
  it.each(rows)('$name', ({ a, b }) => {
    expect(hashes(a)).toEqual(hashes(b));
  });

  it('the echo of an answer hashes as the SDK message the client pushes back, whole or rebuilt', () => {
    const answer = openAIAnswer(answered);
    const [first] = hashes([user]);
    const message = answered.choices[0]!.message;
    const asReturned: ChatCompletionMessageParam[] = [user, message];
    const rebuilt: ChatCompletionMessageParam[] = [
      user,
      { role: 'assistant', content: message.content, tool_calls: message.tool_calls! },
    ];
    expect(hashes(asReturned)[1]).toBe(chainHash(first!, answer.echo));
    expect(hashes(rebuilt)[1]).toBe(chainHash(first!, answer.echo));
  });

  it('what the model reads does change the hash', () => {
    const base: ChatCompletionMessageParam[] = [user, { role: 'tool', tool_call_id: 'c', content: 'out' }];
    const variants: unknown[][] = [
      [{ role: 'user', content: 'Fix the test ' }, base[1]],
      [{ role: 'system', content: 'Fix the test' }, base[1]],
      [user, { role: 'tool', tool_call_id: 'd', content: 'out' }],
      [user, { role: 'tool', tool_call_id: 'c', content: 'out2' }],
      [
        user,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'ls', arguments: '{ }' } }],
        },
      ],
    ];
    const original = hashes(base)[1];
    for (const variant of variants) expect(hashes(variant)[1]).not.toBe(original);
  });
});

describe('openAIChatElements: the writes', () => {
  it('maps each role onto the stored model', () => {
    const elements = openAIChatElements([
      { role: 'developer', content: [{ type: 'text', text: 'Be brief.' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat' } },
          { type: 'input_audio', input_audio: { data: 'UklG', format: 'wav' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Let me look.',
        reasoning_content: 'An image and a sound.',
        tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'fs.read', arguments: '{"p":1}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'call_9',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
    ]);
    expect(elements.map((e) => e.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(elements[0]!.message).toMatchObject({
      role: 'system',
      parts: [{ type: 'text', text: 'Be brief.' }],
    });
    expect(elements[1]!.message!.parts).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'file', mime: 'image/png', filename: null, url: 'data:image/png;base64,AAAA' },
      { type: 'file', mime: 'image/*', filename: null, url: 'https://example.com/cat' },
      { type: 'file', mime: 'audio/wav', filename: null, url: 'data:audio/wav;base64,UklG' },
    ]);
    expect(elements[2]!.message!.parts).toEqual([
      { type: 'reasoning', text: 'An image and a sound.' },
      { type: 'text', text: 'Let me look.' },
      {
        type: 'tool',
        callId: 'call_9',
        tool: 'fs.read',
        status: 'pending',
        input: '{"p":1}',
        output: null,
        error: null,
      },
    ]);
    expect(elements[3]!.message).toBeNull();
    expect(elements[3]!.toolResults).toEqual([{ callId: 'call_9', output: 'a\n\nb', error: null }]);
  });
});

describe('openAIChatElements: provider reasoning', () => {
  it.each([
    [{ reasoning_content: 'thought' }, [{ type: 'reasoning', text: 'thought' }]],
    [{ reasoning: 'thought' }, [{ type: 'reasoning', text: 'thought' }]],
    [{ reasoning: { effort: 'high' } }, []],
    [{ reasoning_content: 'bad \u0000 text' }, []],
  ])('%j', (extra, reasoning) => {
    const [element] = openAIChatElements([{ role: 'assistant', content: 'ok', ...extra }]);
    expect(element!.message!.parts).toEqual([...reasoning, { type: 'text', text: 'ok' }]);
  });
});

it('stores a call without arguments as an empty object, and hashes what the model wrote', () => {
  const noArguments = (args: string) =>
    openAIChatElements([
      {
        role: 'assistant',
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'now', arguments: args } }],
      },
    ])[0]!;
  expect(noArguments('').message!.parts[0]).toMatchObject({ input: {} });
  expect(noArguments('').hash).not.toBe(noArguments('{}').hash);
});

describe('openAIChatElements: files', () => {
  it.each([
    [
      { file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' },
      'application/pdf',
      'data:application/pdf;base64,JVBE',
    ],
    [{ file_data: 'JVBE', filename: 'Report.PDF' }, 'application/pdf', 'data:application/pdf;base64,JVBE'],
    [{ file_data: 'AAAA' }, 'application/octet-stream', 'data:application/octet-stream;base64,AAAA'],
    [{ file_id: 'file-abc' }, 'application/octet-stream', 'openai-file:file-abc'],
  ])('%j → a %s file part', (file, mime, url) => {
    const [element] = openAIChatElements([{ role: 'user', content: [{ type: 'file', file }] }]);
    expect(element!.message!.parts).toEqual([
      { type: 'file', mime, filename: 'filename' in file ? file.filename : null, url },
    ]);
  });
});

describe('openAIAnswer', () => {
  it('takes a message accumulated from a stream without its role', () => {
    const { role: _role, ...message } = answered.choices[0]!.message;
    const fromStream = { ...answered, choices: [{ ...answered.choices[0]!, message }] };
    expect(openAIAnswer(fromStream)).toEqual(openAIAnswer(answered));
  });

  it('stores the first choice with tool parts pending, the finish and the normalised usage', () => {
    const answer = openAIAnswer(answered);
    expect(answer.message).toEqual({
      role: 'assistant',
      parts: [
        { type: 'text', text: 'Reading it.' },
        {
          type: 'tool',
          callId: 'call_1',
          tool: 'read',
          status: 'pending',
          input: '{"path":"a.ts"}',
          output: null,
          error: null,
        },
      ],
      finish: 'tool-calls',
      usage: { input: 176, output: 80, reasoning: 30, cacheRead: 1024, cacheWrite: 0 },
    });
    expect(answer.usage).toEqual(answer.message.usage);
  });

  it('refuses a completion without a choice', () => {
    expect(() => openAIAnswer({ ...answered, choices: [] })).toThrow(DropInInputError);
  });
});

describe('openAIUsage', () => {
  const rows: { name: string; usage: unknown; expected: unknown }[] = [
    { name: 'absent', usage: undefined, expected: null },
    {
      name: 'no details',
      usage: { prompt_tokens: 10, completion_tokens: 5 },
      expected: { input: 10, output: 5, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
    },
    {
      name: 'cached and reasoning',
      usage: {
        prompt_tokens: 100,
        completion_tokens: 50,
        prompt_tokens_details: { cached_tokens: 64 },
        completion_tokens_details: { reasoning_tokens: 20 },
      },
      expected: { input: 36, output: 50, reasoning: 20, cacheRead: 64, cacheWrite: 0 },
    },
    {
      name: 'inconsistent reports are clamped to what the contract accepts',
      usage: {
        prompt_tokens: 10,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 99 },
        completion_tokens_details: { reasoning_tokens: 9 },
      },
      expected: { input: 0, output: 5, reasoning: 5, cacheRead: 10, cacheWrite: 0 },
    },
  ];
  it.each(rows)('$name', ({ usage, expected }) => {
    expect(openAIUsage(usage)).toEqual(expected);
  });
});
