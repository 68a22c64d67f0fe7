import { describe, expect, it } from 'vitest';
import type { MessageInput } from '@compactor/db';
import { constraints, firstGoal, latestRequest, userText } from './user-facts';

const user = (text: string): MessageInput => ({ role: 'user', parts: [{ type: 'text', text }] });
const assistant = (text: string): MessageInput => ({ role: 'assistant', parts: [{ type: 'text', text }] });

const AGENTS_MD =
  '# AGENTS.md instructions for /home/dev/dates\n\n<INSTRUCTIONS>\n- Never commit directly to main.\n- You must run `npm run lint` first.\n</INSTRUCTIONS>';
const ENVIRONMENT_CONTEXT =
  '<environment_context>\n  <cwd>/home/dev/dates</cwd>\n  <sandbox_mode>workspace-write</sandbox_mode>\n</environment_context>';
const IMAGE_NOTE =
  '[Image: original 2938x1564, displayed at 2000x1065. Multiply coordinates by 1.47 to map to original image.]';
const REQUEST = 'Fix the date parser in src/parser.ts. Never touch the public API.';
const FOLLOW_UP = 'Now add ISO week dates. Use only the standard library.';

/** A Codex-shaped transcript: harness context first, an image note last. */
const transcript: MessageInput[] = [
  user(AGENTS_MD),
  user(ENVIRONMENT_CONTEXT),
  user(REQUEST),
  assistant('Fixed the parser.'),
  user(`${FOLLOW_UP}\n<system-reminder>\nThe user opened src/parser.ts.\n</system-reminder>`),
  assistant('Added them.'),
  user(IMAGE_NOTE),
];

describe('user facts without the harness text', () => {
  it('takes the first request the user wrote as the goal', () => {
    expect(firstGoal(transcript)).toEqual({ index: 2, text: REQUEST });
  });

  it('takes the last request the user wrote as the latest, past the image note', () => {
    expect(latestRequest(transcript)).toEqual({ index: 4, text: FOLLOW_UP });
    expect(latestRequest(transcript, 4)).toEqual({ index: 2, text: REQUEST });
  });

  it("finds the user's constraints, core's cues included, and none of the AGENTS.md rules", () => {
    expect(constraints(transcript).map((c) => [c.index, c.text, c.cues])).toEqual([
      [2, 'Never touch the public API.', ['never']],
      [4, 'Use only the standard library.', ['only']],
    ]);
  });

  it.each([
    [AGENTS_MD, ''],
    [IMAGE_NOTE, ''],
    [`${ENVIRONMENT_CONTEXT}\n${REQUEST}`, REQUEST],
  ])('reads the words of %j', (text, words) => {
    expect(userText(user(text))).toBe(words);
  });
});
