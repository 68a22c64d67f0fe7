import { describe, expect, it } from 'vitest';
import type { TranscriptEntry } from './transcript';
import { parseIndexedMessages, parseTranscript, taggedSection } from './transcript';

describe('parseTranscript', () => {
  it.each<[string, string, Array<Partial<TranscriptEntry>>]>([
    [
      'labelled blocks',
      '[User]: hi\n\n[Assistant]: hello',
      [
        { kind: 'user', text: 'hi' },
        { kind: 'assistant', text: 'hello' },
      ],
    ],
    [
      'multi-line blocks keep their lines',
      '[User]: line one\nline two',
      [{ kind: 'user', text: 'line one\nline two' }],
    ],
    [
      'a tool call is split into name and arguments',
      '[Assistant tool call]: read({"path":"a.ts"})\n\n[Tool result]: text',
      [
        { kind: 'tool-call', tool: 'read', args: '{"path":"a.ts"}' },
        { kind: 'tool-result', text: 'text' },
      ],
    ],
    ['tool errors', '[Tool error]: boom', [{ kind: 'tool-error', text: 'boom' }]],
    [
      'a summary message inside the range',
      '[Summary of earlier conversation]: ## Goal\nx',
      [{ kind: 'summary', text: '## Goal\nx' }],
    ],
    ['attachments have no colon', '[User attached file: a.png (image/png)]', [{ kind: 'attachment' }]],
    [
      'a truncation marker is not a label',
      '[Tool result]: abc\n[... 10 more characters truncated]',
      [{ kind: 'tool-result', text: 'abc\n[... 10 more characters truncated]' }],
    ],
    ['unknown labels are kept as other', '[Narrator]: once', [{ kind: 'other', text: 'once' }]],
    ['text before the first label is ignored', 'preamble\n[User]: hi', [{ kind: 'user', text: 'hi' }]],
  ])('%s', (_name, transcript, expected) => {
    const entries = parseTranscript(transcript);
    expect(entries).toHaveLength(expected.length);
    expected.forEach((fields, i) => expect(entries[i]).toMatchObject(fields));
  });
});

describe('taggedSection', () => {
  it.each([
    ['a block on its own lines', 'a\n<conversation>\nx\ny\n</conversation>\nb', 'x\ny'],
    ['prose mentions are skipped', 'see <conversation> below\n<conversation>\nreal\n</conversation>', 'real'],
    ['no block', 'nothing here', null],
  ])('%s', (_name, text, expected) => {
    expect(taggedSection(text, 'conversation')).toBe(expected);
  });
});

describe('parseIndexedMessages', () => {
  it('reads seed 002 lines with continuation lines', () => {
    expect(parseIndexedMessages('Conversation:\n\n[0] USER: fix it\nplease\n\n[1] ASSISTANT: done')).toEqual([
      { index: 0, role: 'user', text: 'fix it\nplease' },
      { index: 1, role: 'assistant', text: 'done' },
    ]);
  });
});
