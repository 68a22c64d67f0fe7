import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { MessageInput } from '@compactor/db';
import { parseTranscriptText } from './detect';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures');
const read = (name: string) => parseTranscriptText(readFileSync(join(fixtures, name), 'utf8'), name);
const tools = (messages: MessageInput[]) =>
  messages.flatMap((m) => m.parts.flatMap((p) => (p.type === 'tool' ? [p] : [])));
const texts = (messages: MessageInput[], role: string) =>
  messages
    .filter((m) => m.role === role)
    .flatMap((m) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])));

describe('Claude Code sessions', () => {
  const [session] = read('claude-code-session.jsonl');
  const messages = session!.messages;

  it('is detected and keyed by its session id', () => {
    expect(session!.format).toBe('claude-code');
    expect(session!.key).toBe('claude-code-session.jsonl#7f3c2a91');
  });

  it('joins a streamed reply (one block per entry, same message id) into one model call', () => {
    const first = messages.find((m) => m.role === 'assistant')!;
    expect(first.parts.map((p) => p.type)).toEqual(['reasoning', 'text', 'tool']);
    expect(first.finish).toBe('tool-calls');
    expect(first.usage).toEqual({ input: 4, output: 187, reasoning: 0, cacheRead: 2_500, cacheWrite: 59 });
  });

  it('pairs every tool_use with its tool_result, errors included', () => {
    const parts = tools(messages);
    expect(parts.map((p) => p.callId)).toContain('toolu_01EditTotals');
    expect(parts.every((p) => p.status === 'completed' || p.status === 'error')).toBe(true);
    const failed = parts.find((p) => p.callId === 'toolu_01RunTests')!;
    expect(failed.status).toBe('error');
    expect(failed.error).toContain('Expected: 102437');
    expect(parts.find((p) => p.callId === 'toolu_01ReadTotals')!.input).toEqual({
      file_path: '/home/dev/invoice-service/src/billing/totals.ts',
    });
  });

  it('leaves out meta notes, sidechains and summaries; tool results are not user messages', () => {
    const users = texts(messages, 'user');
    expect(users).toHaveLength(3);
    expect(users[0]).toMatch(/^Invoice totals are off by one cent/);
    expect(users.join('\n')).not.toContain('<command-name>');
    expect(JSON.stringify(messages)).not.toContain('sub-agent notes');
  });

  it('finishes text-only replies with stop', () => {
    const last = messages.at(-1)!;
    expect(last).toMatchObject({ role: 'assistant', finish: 'stop' });
  });
});

describe('Codex rollouts', () => {
  const [session] = read('codex-rollout.jsonl');
  const messages = session!.messages;

  it('is detected; the environment context becomes a system message', () => {
    expect(session!.format).toBe('codex');
    expect(messages[0]!.role).toBe('system');
    expect(texts(messages, 'user')).toEqual([
      'The --json flag prints dates in local time. Make it print UTC ISO 8601. Always keep the output keys sorted.',
    ]);
  });

  it('makes one assistant message per model call, closed by its token_count', () => {
    const steps = messages.filter((m) => m.role === 'assistant');
    expect(steps.map((m) => m.parts.map((p) => p.type))).toEqual([
      ['reasoning', 'tool'],
      ['tool'],
      ['tool'],
      ['text'],
    ]);
    // input_tokens include the cached ones; the API's input does not.
    expect(steps[0]!.usage).toEqual({
      input: 2_138,
      cacheRead: 3_072,
      cacheWrite: 0,
      output: 188,
      reasoning: 128,
    });
  });

  it('unwraps tool outputs and keeps apply_patch input where file tracking reads it', () => {
    const parts = tools(messages);
    expect(parts[0]).toMatchObject({ tool: 'shell', status: 'completed' });
    expect(parts[0]!.status === 'completed' && parts[0]!.output).toMatch(/^src\/print.ts:14/);
    expect(parts[2]).toMatchObject({ tool: 'apply_patch', status: 'completed' });
    expect((parts[2]!.input as { input: string }).input).toContain('*** Update File: src/print.ts');
  });
});

describe('Chat Completions arrays', () => {
  it('turns tool_calls and tool messages into tool parts', () => {
    const [session] = read('chat-completions.json');
    expect(session!.format).toBe('chat-completions');
    const parts = tools(session!.messages);
    expect(parts).toHaveLength(2);
    expect(parts[0]).toMatchObject({
      tool: 'read_file',
      input: { path: 'config/app.yaml' },
      output: 'retries: 3\ntimeoutMs: 5000\n',
    });
    expect(session!.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'assistant',
      'assistant',
    ]);
  });

  it('reads JSONL of { messages } in the Chat Completions shape, one session per line', () => {
    const line = JSON.stringify({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
      ],
    });
    const sessions = parseTranscriptText(`${line}\n${line}\n`, 'two.jsonl');
    expect(sessions.map((s) => [s.key, s.format])).toEqual([
      ['two.jsonl:1', 'chat-completions'],
      ['two.jsonl:2', 'chat-completions'],
    ]);
  });

  it('marks a call that never got its result as an error', () => {
    const [session] = parseTranscriptText(
      JSON.stringify([
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{}' } }],
        },
      ]),
      'cut.json',
    );
    expect(tools(session!.messages)[0]).toMatchObject({
      status: 'error',
      error: 'no result in the transcript',
    });
  });
});

describe('API-format JSONL', () => {
  it('reads one session per line and gives messages the replay’s own ids', () => {
    const session = (text: string) => ({
      messages: [{ id: 'dup', role: 'user', parts: [{ type: 'text', text }] }],
    });
    const sessions = parseTranscriptText(
      `${JSON.stringify(session('a'))}\n\n${JSON.stringify(session('b'))}\n`,
      'sessions.jsonl',
    );
    expect(sessions.map((s) => [s.key, s.format, s.messages[0]!.id])).toEqual([
      ['sessions.jsonl:1', 'compactor', 'm1'],
      ['sessions.jsonl:3', 'compactor', 'm1'],
    ]);
  });

  it('reads the bundled example session', () => {
    const text = readFileSync(join(fixtures, '..', 'examples', 'coding-session.jsonl'), 'utf8');
    const [session] = parseTranscriptText(text, 'coding-session.jsonl');
    expect(session!.format).toBe('compactor');
    expect(session!.messages.length).toBeGreaterThan(20);
  });
});

describe('errors name the line', () => {
  it('a line that is not JSON', () => {
    const good = JSON.stringify({ messages: [{ role: 'user', parts: [{ type: 'text', text: 'x' }] }] });
    expect(() => parseTranscriptText(`${good}\n${good}\n{"messages": [\n`, 's.jsonl')).toThrow(
      /^s\.jsonl:3: not JSON/,
    );
  });

  it('a message with a bad role, by line and index', () => {
    const bad = JSON.stringify({ messages: [{ role: 'robot', parts: [] }] });
    expect(() => parseTranscriptText(`${bad}\n`, 's.jsonl')).toThrow(
      's.jsonl:1: message 0: "role" must be user, assistant or system, got "robot"',
    );
  });

  it('a Claude Code entry without its message', () => {
    const entry = { parentUuid: null, sessionId: 's', type: 'user', uuid: 'u1' };
    expect(() => parseTranscriptText(`${JSON.stringify(entry)}\n`, 'c.jsonl')).toThrow(
      'c.jsonl:1: a "user" entry without its "message" object',
    );
  });

  it('a format it does not know', () => {
    expect(() => parseTranscriptText('{"hello": "world"}\n', 'x.jsonl')).toThrow(
      /^x\.jsonl:1: unrecognised transcript format/,
    );
  });

  it('an empty file', () => {
    expect(() => parseTranscriptText('\n\n', 'e.jsonl')).toThrow('e.jsonl: the file is empty');
  });
});
