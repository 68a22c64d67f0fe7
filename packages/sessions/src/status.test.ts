/**
 * A session's status at the package's boundary: the stored count, the estimate a usage report
 * calibrates (which may add, up to a quarter of the usable input, and never subtract), the
 * silent overflow, and that an append answers what `sessionStatus` reads next.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '@compactor/core';
import { getTokenizer } from '@compactor/tokenizer';
import { sessionContext } from './context';
import { sessionStatus } from './status';
import { newSession, parsedMessages, useTestSessions } from './test-support/session-resources';

const t = useTestSessions();
const count = (text: string) => getTokenizer('o200k_base').countSync(text);

const say = (role: 'user' | 'assistant', text: string, usage?: Record<string, number>) => ({
  role,
  parts: [{ type: 'text', text }],
  ...(role === 'assistant' ? { finish: 'stop' } : {}),
  ...(usage ? { usage } : {}),
});
const append = (id: string, messages: unknown[]) =>
  t.messages.append({ tenantId: 'tenant-a', id }, parsedMessages(messages), t.log);

describe('the status an append answers', () => {
  it('is the stored count when no usage was reported', async () => {
    await newSession(t, 'tenant-a', 'st-stored');
    const { status } = await append('st-stored', [say('user', 'hi'), say('assistant', 'hello')]);
    expect(status).toMatchObject({
      tokens: count('hi') + count('hello'),
      estimate: 'stored',
      overflow: false,
    });
  });

  it('adds what a report saw beyond the stored messages, then what came after it', async () => {
    await newSession(t, 'tenant-a', 'st-hybrid', { model: { id: 'gpt-4o' } });
    const { status } = await append('st-hybrid', [
      say('user', 'hi'),
      say('assistant', 'hello', { input: 9_000, output: 50, cacheRead: 1_000 }),
      say('user', 'and now?'),
    ]);
    expect(status).toMatchObject({
      tokens: 9_000 + 1_000 + 50 + count('and now?'),
      estimate: 'hybrid',
      overflow: false,
    });
  });

  it('never goes below the stored count, and a report adds at most a quarter of the usable input', async () => {
    await newSession(t, 'tenant-a', 'st-bounds');
    const words = ' word'.repeat(2_000);
    const low = await append('st-bounds', [
      say('user', words),
      say('assistant', 'ok', { input: 1, output: 1 }),
    ]);
    const stored = count(words) + count('ok');
    expect(low.status.tokens).toBe(stored);

    const high = await append('st-bounds', [say('assistant', 'fine', { input: 6_900, output: 1 })]);
    // Usable 7,000: the report may add 1,750 over what is stored.
    expect(high.status.tokens).toBe(stored + count('fine') + 1_750);
    expect(high.status.calibrationTokens).toBe(1_750);
  });

  it('shows a silent overflow: a reported prompt above the window', async () => {
    await newSession(t, 'tenant-a', 'st-silent', { policy: { auto: false } });
    const { status } = await append('st-silent', [
      say('user', 'hi'),
      say('assistant', 'ok', { input: 9_000, output: 2 }),
    ]);
    expect(status).toMatchObject({ overflow: true, usable: 7_000, estimate: 'hybrid' });
  });

  it('is what sessionStatus reads next', async () => {
    const session = await newSession(t, 'tenant-a', 'st-next');
    const answered = await append('st-next', [
      say('user', 'one'),
      say('assistant', 'two', { input: 40, output: 2 }),
    ]);
    expect(await sessionStatus(t.database.db, session)).toEqual(answered.status);
  });
});

/** A PNG of `width × height` px as a data URL: its signature and IHDR chunk (all a count reads). */
function screenshotUrl(width: number, height: number): string {
  const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
  const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...u32(13), 0x49, 0x48, 0x44, 0x52];
  const bytes = Uint8Array.from([...png, ...u32(width), ...u32(height), 8, 6, 0, 0, 0, 0, 0, 0, 0]);
  return `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;
}
const screenshot = (n: number) => ({
  role: 'user',
  parts: [
    { type: 'text', text: `Screenshot ${n} of the settings page.` },
    { type: 'file', mime: 'image/png', filename: `shot-${n}.png`, url: screenshotUrl(3840, 2160) },
  ],
});

describe('a session of big screenshots, counted as its provider counts them', () => {
  // The same 4K screenshot costs Opus 4.7 4,784 tokens, GPT-4o 1,105 and Sonnet 4 1,638.
  const window = { contextWindow: 32_000, maxOutputTokens: 4_000 };
  const imageCount = (family: number) => family + count('shot-1.png');
  const shotText = count('Screenshot 1 of the settings page.');

  it.each([
    ['claude-opus-4-7', 4784],
    ['gpt-4o', 1105],
    ['claude-sonnet-4', 1638],
  ])('reports the estimate of %s: %i tokens an image', async (model, tokens) => {
    const id = `st-shots-${model}`;
    await newSession(t, 'tenant-a', id, { model: { id: model, ...window }, policy: { auto: false } });
    const { status } = await append(id, [screenshot(1), screenshot(2)]);
    expect(status.tokens).toBe(2 * (shotText + imageCount(tokens)));
  });

  it.each([
    ['claude-opus-4-7', 'image/png', 4784],
    ['gpt-4o', 'image/jpeg', 1445],
    ['claude-sonnet-4', 'image/webp', 1640],
    ['gpt-4o', 'application/pdf', 30_000],
  ])(
    'counts a %s file by URL, never fetched, of type %s as its largest: %i tokens',
    async (model, mime, tokens) => {
      const id = `st-url-${model}-${mime.replace('/', '-')}`;
      await newSession(t, 'tenant-a', id, {
        model: { id: model, contextWindow: 200_000 },
        policy: { auto: false },
      });
      const { status } = await append(id, [
        {
          role: 'user',
          parts: [{ type: 'file', mime, filename: 'shot-1.png', url: 'https://example.test/a' }],
        },
      ]);
      expect(status.tokens).toBe(imageCount(tokens));
    },
  );

  it('starts a compaction when the screenshots take it over the threshold by the provider count, not before', async () => {
    const crossings: Record<string, boolean> = {};
    for (const model of ['claude-opus-4-7', 'gpt-4o']) {
      const id = `st-cross-${model}`;
      await newSession(t, 'tenant-a', id, { model: { id: model, ...window } });
      const first = await append(id, [say('user', 'Fix the footer overlap.')]);
      const trigger = first.status.triggerTokens!;
      // Text up to 6,000 under the threshold: two Opus screenshots cross it, two GPT ones do not.
      const words = trigger - 6_000 - first.status.tokens;
      const filled = await append(id, [say('user', ' word'.repeat(words)), say('assistant', 'ok')]);
      expect(filled.compaction).toBeNull();
      const shots = await append(id, [screenshot(1), screenshot(2)]);
      crossings[model] = shots.compaction !== null;
      expect(shots.status.tokens - filled.status.tokens).toBe(
        2 * (shotText + imageCount(model === 'gpt-4o' ? 1105 : 4784)),
      );
    }
    expect(crossings).toEqual({ 'claude-opus-4-7': true, 'gpt-4o': false });
  });

  it('counts the images past the media budget as the markers the context read serves', async () => {
    // Usable 28,000: the kept images take at most 14,000, two Opus 4.7 screenshots of 4,784.
    const session = await newSession(t, 'tenant-a', 'st-budget', {
      model: { id: 'claude-opus-4-7', ...window },
      policy: { auto: false },
    });
    const { status } = await append('st-budget', [1, 2, 3, 4, 5, 6].map(screenshot));
    const served = await sessionContext(
      t.resources,
      { tenantId: 'tenant-a', id: 'st-budget' },
      {
        format: 'native',
        fit: 'none',
      },
    );
    const shown = (served.messages as Message[]).flatMap((m) => m.parts.filter((p) => p.type === 'file'));
    expect(shown).toHaveLength(2);
    expect(status.tokens).toBe(served.tokens);
    expect(status.tokens).toBeLessThan(6 * (shotText + imageCount(4784)));
    expect(await sessionStatus(t.database.db, session)).toEqual(status);
  });
});
