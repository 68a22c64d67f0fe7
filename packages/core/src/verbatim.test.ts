import { describe, expect, it } from 'vitest';
import { chatMessageText, holdsVerbatim, toolInputStrings, verbatimText } from './verbatim';

describe('holdsVerbatim', () => {
  const context = verbatimText([
    'Constraints:\n- Never load all\n  invoices at once.',
    'Edited src/Export.ts',
  ]);

  it('finds the text with whitespace collapsed on both sides', () => {
    expect(holdsVerbatim(context, 'Never load all invoices   at once.')).toBe(true);
    expect(holdsVerbatim(context, 'src/Export.ts')).toBe(true);
  });

  it('refuses a word-bag match, another case and the empty string', () => {
    expect(holdsVerbatim(context, 'Never load invoices all at once.')).toBe(false);
    expect(holdsVerbatim(context, 'src/export.ts')).toBe(false);
    expect(holdsVerbatim(context, '  ')).toBe(false);
  });
});

describe('chatMessageText', () => {
  it("reads the content and the calls' argument values, not their JSON", () => {
    const text = chatMessageText({
      content: [{ type: 'text', text: 'Running it.' }],
      tool_calls: [{ function: { name: 'bash', arguments: '{"command":"grep \\"a b\\" src/x.ts","n":2}' } }],
    });
    expect(text.split('\n')).toEqual(['Running it.', 'bash', 'grep "a b" src/x.ts', '2']);
    expect(chatMessageText({ tool_calls: [{ function: { name: 'x', arguments: 'not json' } }] })).toBe(
      '\nx\nnot json',
    );
    expect(toolInputStrings({ a: [true, null, { b: 'c' }] })).toEqual(['true', 'c']);
  });
});
