import { buildSummaryPrompt, extractFileOps, summaryLengthNote, type Message } from '@compactor/core';
import { assistant, conversation, text, toolCall, user } from '@compactor/core/testing';
import { describe, expect, it } from 'vitest';
import type { FoldState } from './fold-plan';
import { FoldPrompts } from './fold-prompts';
import { arraySource, MessageWindow } from './message-source';

const bounds = { toolResultMaxChars: 2000, toolArgsMaxChars: 1000 };

function session(): Message[] {
  return conversation([
    user('Fix the failing parser test. Keep the public API unchanged.'),
    assistant([
      text('Reading the parser.'),
      toolCall('read', { path: 'src/parser.ts' }, 'export {}\n'.repeat(30)),
    ]),
    user('Now the lexer.'),
    assistant([text('Reading the lexer.'), toolCall('read', { path: 'src/lexer.ts' }, 'lex()\n'.repeat(30))]),
  ]);
}

/** Prompts of a fold over `messages`, counted by characters (the count is not what is tested). */
function promptsOver(messages: Message[]): FoldPrompts {
  const source = arraySource(messages);
  return new FoldPrompts({
    messages: new MessageWindow(source, 0),
    source,
    offset: 0,
    kind: 'history',
    instructions: null,
    fileOps: null,
    style: undefined,
    bounds,
    countTokens: (value) => value.length,
    signal: undefined,
  });
}

const plan = (target: number | null = null): FoldState => ({
  budget: 100_000,
  target,
  cutOffsInARow: 0,
  replans: 0,
});

describe('FoldPrompts.promptFor', () => {
  it('builds the prompt of a request once: asked again (a new array of the same messages), it is the same prompt', async () => {
    const messages = session();
    const prompts = promptsOver(messages);
    const range = { start: 0, end: messages.length };
    const first = await prompts.promptFor(range, messages.slice(), null, plan());
    const again = await prompts.promptFor(range, messages.slice(), null, plan());
    expect(again).toBe(first);
    expect(first).toEqual(
      buildSummaryPrompt({ messages, previousSummary: null, instructions: null, ...bounds }),
    );
  });

  it('builds it anew when the running summary, a message, the range or the length target differ', async () => {
    const messages = session();
    const prompts = promptsOver(messages);
    const whole = { start: 0, end: messages.length };
    await prompts.promptFor(whole, messages, null, plan());

    const running = await prompts.promptFor(whole, messages, 'Earlier: the parser was fixed.', plan());
    expect(running).toEqual(
      await promptsOver(messages).promptFor(whole, messages, 'Earlier: the parser was fixed.', plan()),
    );
    expect(running.user).toContain('Earlier: the parser was fixed.');

    // A shrunk message is a new object with other content: the prompt shows that content.
    const shrunk = [...messages.slice(0, -1), { ...messages.at(-1)!, parts: [text('Cut in the middle.')] }];
    const cut = await prompts.promptFor(whole, shrunk, 'Earlier: the parser was fixed.', plan());
    expect(cut.user).toContain('Cut in the middle.');
    expect(cut.user).not.toContain('lex()');

    const firstHalf = await prompts.promptFor({ start: 0, end: 2 }, messages.slice(0, 2), null, plan());
    expect(firstHalf.user).not.toContain('Now the lexer.');

    const noted = await prompts.promptFor(whole, messages, null, plan(700));
    expect(noted.user.endsWith(summaryLengthNote(700))).toBe(true);
  });

  it('fits the prompt it counted last by that count', async () => {
    const messages = session();
    const prompts = promptsOver(messages);
    const prompt = await prompts.promptFor({ start: 0, end: messages.length }, messages, null, plan());
    const tokens = await prompts.count(prompt);
    expect(await prompts.fits(prompt, tokens)).toBe(true);
    expect(await prompts.fits(prompt, tokens - 1)).toBe(false);
  });
});

describe('FoldPrompts.done', () => {
  it("takes a chunk's file ops for the next prompt; after the last one, asked anyway, they are the same", async () => {
    const messages = session();
    const chunked = promptsOver(messages);
    await chunked.done({ start: 0, end: 2 });
    expect(await chunked.earlierFileOps(2)).toEqual(extractFileOps(messages.slice(0, 2)));

    // Nothing follows the whole range: its file ops are not taken, and come out right when asked.
    const whole = promptsOver(messages);
    await whole.done({ start: 0, end: messages.length });
    expect(await whole.earlierFileOps(messages.length)).toEqual(extractFileOps(messages));
    expect((await whole.earlierFileOps(messages.length))?.readFiles).toEqual([
      'src/lexer.ts',
      'src/parser.ts',
    ]);
  });
});
