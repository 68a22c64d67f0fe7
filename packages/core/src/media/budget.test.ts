import { describe, expect, it } from 'vitest';
import type { FilePart, Message } from '../model';
import { message, text, toolPart } from '../test-support/builders';
import { serializeTranscript } from '../transcript';
import { applyMediaBudget, mediaBudgetOf } from './budget';
import { formatMediaReference, parseMediaReference } from './reference';

const sha = (n: number) => n.toString(16).padStart(64, '0');
const shot = (n: number, tokens = 1105): FilePart => ({
  type: 'file',
  mime: 'image/png',
  filename: `shot-${n}.png`,
  url: formatMediaReference({ sha256: sha(n), bytes: 524_288, width: 3840, height: 2160 }),
  tokens,
});
/** A screenshot tool call and, in the same message, the image it produced. */
const turn = (n: number): Message =>
  message(n, 'assistant', [toolPart('screenshot', 10, { callId: `call_${n}` }), shot(n)]);

describe('media references', () => {
  it('round-trips the hash, bytes and pixels', () => {
    const reference = { sha256: sha(7), bytes: 1234, width: 64, height: 32 };
    expect(parseMediaReference(formatMediaReference(reference))).toEqual(reference);
    expect(
      parseMediaReference(formatMediaReference({ ...reference, width: null, height: null })),
    ).toMatchObject({
      width: null,
    });
    expect(parseMediaReference('compactor-media:sha256:xyz;bytes=1')).toBeNull();
    expect(parseMediaReference('https://example.test/a.png')).toBeNull();
  });
});

describe('applyMediaBudget', () => {
  const view = [1, 2, 3, 4, 5].map(turn);

  it('keeps the newest images and replaces older ones with a marker naming what they were', () => {
    const { messages, elided, savedTokens } = applyMediaBudget(view, { keepImages: 2, keepTokens: 100_000 });
    expect(elided).toBe(3);
    expect(messages.slice(3)).toEqual(view.slice(3));
    const marker = messages[0]!.parts[1]!;
    expect(marker).toMatchObject({ type: 'text' });
    expect(marker.type === 'text' && marker.text).toBe(
      `[Older image shot-1.png not shown (image/png, 3840×2160 px, 512 KB), message m1, after call call_1; media id ${sha(1).slice(0, 16)}]`,
    );
    expect(savedTokens).toBe(3 * (1105 - marker.tokens));
  });

  it('keeps no more tokens of media than the budget', () => {
    expect(applyMediaBudget(view, { keepImages: 20, keepTokens: 2300 }).elided).toBe(3);
    expect(applyMediaBudget(view, { keepImages: 0, keepTokens: 100_000 }).elided).toBe(5);
  });

  it('returns a view within the budget as it is', () => {
    expect(applyMediaBudget(view, mediaBudgetOf({})).messages).toBe(view);
    expect(mediaBudgetOf({ media: { keepImages: 3 } })).toEqual({ keepImages: 3, keepTokens: 40_000 });
  });
});

describe('the summarizer sees a placeholder per image, never bytes', () => {
  it('names an unnamed image by what it is and the tool that produced it', () => {
    const inline: FilePart = {
      type: 'file',
      mime: 'image/png',
      filename: null,
      url: 'data:image/png;base64,iVBORw0KGgo=',
      tokens: 255,
    };
    const transcript = serializeTranscript([
      message(1, 'user', [text('what is on the screen?'), { ...shot(1), filename: null }]),
      message(2, 'assistant', [toolPart('screenshot', 10, { callId: 'c2', output: 'taken' }), inline]),
    ]);
    expect(transcript).toContain('[User attached file: unnamed image (image/png)]');
    expect(transcript).toContain('[Assistant attached file: unnamed image (image/png) from tool screenshot]');
    expect(transcript).not.toMatch(/base64|compactor-media|iVBOR/);
  });
});
