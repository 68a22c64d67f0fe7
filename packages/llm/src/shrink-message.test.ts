import { serializeTranscript } from '@compactor/core';
import { assistant, text, toolCall, user } from '@compactor/core/testing';
import { describe, expect, it } from 'vitest';
import { cutMiddle, shrinkMessage } from './shrink-message';

describe('cutMiddle', () => {
  it.each([
    ['short text is kept', 'abcdef', 10, 'abcdef'],
    [
      'keeps 60 % head and 40 % tail',
      'abcdefghijklmnopqrst',
      10,
      "abcdef\n[... 10 characters cut to fit the summarizer's window ...]\nqrst",
    ],
    ['zero keeps only the marker', 'abc', 0, "\n[... 3 characters cut to fit the summarizer's window ...]\n"],
  ])('%s', (_name, text, keep, expected) => {
    expect(cutMiddle(text, keep)).toBe(expected);
  });
});

describe('shrinkMessage', () => {
  const bounds = { toolResultMaxChars: 2000, toolArgsMaxChars: 1000 };

  it('cuts texts to the ratio, keeping both ends', () => {
    const message = user(`START ${'x'.repeat(10_000)} END`);
    const shrunk = shrinkMessage(message, 0.1, bounds);
    const text = shrunk.parts[0]?.type === 'text' ? shrunk.parts[0].text : '';
    expect(text.startsWith('START')).toBe(true);
    expect(text.endsWith('END')).toBe(true);
    expect(text.length).toBeLessThan(1100);
    expect(message.parts[0]).toMatchObject({ text: `START ${'x'.repeat(10_000)} END` });
  });

  it('cuts tool outputs below their transcript bound and arguments too', () => {
    const message = assistant([
      toolCall('write', { path: 'big.txt', content: 'y'.repeat(5000) }, 'z'.repeat(9000)),
    ]);
    const before = serializeTranscript([message], bounds).length;
    const after = serializeTranscript([shrinkMessage(message, 0.25, bounds)], bounds).length;
    expect(after).toBeLessThan(before * 0.4);
  });

  it('a ratio of 1 changes nothing visible', () => {
    const message = assistant([text('hello'), toolCall('read', { path: 'a.ts' }, 'short')]);
    expect(serializeTranscript([shrinkMessage(message, 1, bounds)], bounds)).toBe(
      serializeTranscript([message], bounds),
    );
  });
});
