import type { MessageInput } from '@compactor/db';
import { describe, expect, it } from 'vitest';
import {
  anthropicClearContext,
  codexContext,
  middleOutContext,
  opencodeContext,
  opencodePruned,
} from './baselines';
import { summarizerText } from './drive';
import { survivalItems } from './items';
import { contextText, countSurvival, isPathNamed, isPresent, shareCell } from './measure';

const user = (text: string): MessageInput =>
  ({ role: 'user', parts: [{ type: 'text', text }] }) as MessageInput;
const assistant = (text: string): MessageInput =>
  ({ role: 'assistant', parts: [{ type: 'text', text }] }) as MessageInput;
const tool = (name: string, input: unknown, output: string): MessageInput =>
  ({
    role: 'assistant',
    parts: [
      { type: 'tool', callId: `c-${output.slice(0, 12)}`, tool: name, status: 'completed', input, output },
    ],
  }) as MessageInput;

describe('survival items', () => {
  it('reads files, commands, facts and constraints from the user and tool calls, not harness text', () => {
    const items = survivalItems([
      user('<environment_context>cwd /repo</environment_context>'),
      user('Fix the date parser in `parseDate` with node 20. Never touch the public API.'),
      tool('Read', { file_path: 'src/parser.ts' }, 'export function parseDate() {}'),
      tool('Edit', { file_path: 'src/date.ts', old_string: 'a', new_string: 'b' }, 'ok'),
      tool('Bash', { command: 'npm test' }, 'Tests: 3 passed'),
      user('Now add a test for leap years.'),
    ]);
    expect(items.files).toEqual(expect.arrayContaining(['src/parser.ts', 'src/date.ts']));
    expect(items.modifiedFiles).toEqual(['src/date.ts']);
    expect(items.commands).toEqual(['npm test']);
    expect(items.facts).toEqual(expect.arrayContaining(['parseDate', 'node 20']));
    expect(items.constraints).toEqual(['Never touch the public API.']);
    expect(items.latest).toEqual(['Now add a test for leap years.']);
  });
});

describe('present and recoverable shares', () => {
  it('counts an item present only when it is there verbatim after collapsing whitespace', () => {
    const context = contextText(['Never  touch\nthe public API.', 'edited src/date.ts']);
    expect(isPresent(context, 'Never touch the public API.')).toBe(true);
    expect(isPresent(context, 'src/date.ts')).toBe(true);
    // A word bag is not the sentence.
    expect(isPresent(context, 'Never touch the API.')).toBe(false);
  });

  it('counts a path the ledger block lists grouped or under its root legend as named, nothing else', () => {
    const context = contextText([
      'summary',
      [
        '<session-ledger>',
        'What this session touched (newest first):',
        '(…/ at the start of a path stands for /home/me/worktree/)',
        'Files modified:',
        '- …/src/{a.ts, b.ts}',
        'Commands run:',
        '- cat src/{c.ts, d.ts}',
        '</session-ledger>',
      ].join('\n'),
    ]);
    expect(isPathNamed(context, '/home/me/worktree/src/a.ts')).toBe(true);
    expect(isPathNamed(context, '/home/me/worktree/src/b.ts')).toBe(true);
    // A command is not a file list; the verbatim test still applies to everything.
    expect(isPathNamed(context, 'src/c.ts')).toBe(false);
    expect(isPresent(context, '/home/me/worktree/src/a.ts')).toBe(false);
  });

  it('asks recall only for what is missing, and counts what it finds', async () => {
    const asked: string[] = [];
    const counts = await countSurvival(
      {
        files: ['src/a.ts', 'src/b.ts', 'src/c.ts'],
        modifiedFiles: ['src/b.ts'],
        commands: ['npm test'],
        facts: [],
        constraints: [],
        latest: ['ship it'],
      },
      contextText(['read src/a.ts then ship it']),
      async (_kind, item) => {
        asked.push(item);
        return item === 'src/b.ts';
      },
    );
    expect(asked).toEqual(['src/b.ts', 'src/c.ts', 'npm test', 'src/b.ts']);
    expect(counts.files).toEqual({ total: 3, present: 1, recoverable: 1 });
    expect(counts.commands).toEqual({ total: 1, present: 0, recoverable: 0 });
    expect(counts.latest).toEqual({ total: 1, present: 1, recoverable: 0 });
    expect(counts.modifiedFiles).toEqual({ total: 1, present: 0, recoverable: 1 });
    expect(shareCell(counts.files)).toBe('33 / 33');
    expect(shareCell(counts.facts)).toBe('–');
  });
});

describe('summarizer text', () => {
  it('takes the summarizer’s words without the pinned block Compactor adds', () => {
    const summary = 'Worked on the parser.\n<pinned>\n- Goal: fix it\n</pinned>\nMore.';
    expect(summarizerText(summary)).toBe('Worked on the parser.\n\nMore.');
  });
});

describe('baselines', () => {
  const big = (n: number) => 'x'.repeat(n * 4);

  it('Codex keeps the newest user messages up to 20,000 tokens, then the summary', () => {
    const messages = [user(big(15_000)), assistant('a'), user(big(10_000)), user('latest')];
    const context = codexContext(messages, 'SUMMARY', 100_000);
    expect(context.at(-1)).toBe('SUMMARY');
    expect(context.at(-2)).toBe('latest');
    // The oldest message that crosses 20k is cut to what is left.
    const tokens = context.slice(0, -1).reduce((n, t) => n + t.length / 4, 0);
    expect(tokens).toBeLessThanOrEqual(20_000);
    expect(context).not.toContain('a');
  });

  it('OpenCode prunes outputs beyond the newest 40,000 tokens when more than 20,000 would go', () => {
    const old = tool('read', { path: 'old.ts' }, `OLD${big(30_000)}`);
    const recent = tool('read', { path: 'recent.ts' }, `RECENT${big(39_000)}`);
    const messages = [
      user('start'),
      old,
      recent,
      user('next'),
      tool('read', { path: 'new.ts' }, 'NEW'),
      user('last'),
    ];
    const pruned = opencodePruned(messages);
    // 39,000 protected; 30,000 more pass 40,000 and are more than 20,000: cleared.
    expect([...pruned].map((p) => p.input)).toEqual([{ path: 'old.ts' }]);
    // The only candidate (16,000) is not more than 20,000: not worth a cache break, nothing cleared.
    const small = tool('read', { path: 'old.ts' }, big(16_000));
    expect(opencodePruned([user('start'), small, recent, user('next'), user('last')]).size).toBe(0);
    // The newest 2 user turns are never pruned, whatever their size.
    expect(opencodePruned([user('start'), user('next'), old, recent, user('last')]).size).toBe(0);
    const context = opencodeContext(messages, 'SUMMARY', 32_000);
    expect(context.slice(0, 2)).toEqual(['What did we do so far?', 'SUMMARY']);
    // The tail: min(15,000, max(2,000, usable / 4)) = 8,000 tokens of the newest messages.
    expect(context.slice(2).join('\n')).toContain('NEW');
    expect(context.slice(2).join('\n')).not.toContain('RECENT');
  });

  it('Anthropic clearing keeps the 3 newest tool results and fills the window with the rest', () => {
    const messages = [1, 2, 3, 4, 5].map((i) => tool('Bash', { command: `step ${i}` }, `OUT${i}`));
    const context = anthropicClearContext(messages, 'SUMMARY', 10_000).join('\n');
    expect(context).not.toContain('OUT1');
    expect(context).not.toContain('OUT2');
    for (const i of [3, 4, 5]) expect(context).toContain(`OUT${i}`);
    expect(context).toContain('step 1');
    expect(context.startsWith('SUMMARY')).toBe(true);
  });

  it('middle-out drops from the middle until the context fits, keeping the first and the latest', () => {
    const messages = [user('FIRST'), ...[1, 2, 3, 4].map((i) => assistant(`M${i}${big(100)}`)), user('LAST')];
    const context = middleOutContext(messages, 210);
    expect(context[0]).toBe('FIRST');
    expect(context.at(-1)).toBe('LAST');
    expect(context.length).toBe(4);
    expect(context.reduce((n, t) => n + Math.ceil(t.length / 4), 0)).toBeLessThanOrEqual(210);
  });
});
