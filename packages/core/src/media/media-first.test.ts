/**
 * Media before text: a session over its window because of screenshots loses old screenshots
 * (their markers) before any text is pruned, clamped, dropped or summarised, both when the
 * trigger decides whether to compact and when the read-time fit serves the view.
 */
import { describe, expect, it } from 'vitest';
import type { FitCounters } from '../fit';
import type { FilePart, Message } from '../model';
import { resolvePolicy } from '../policy';
import { fitViewForRead, type ReadFitOptions } from '../read-fit';
import { assistant, conversation, model, toolCall, user } from '../test-support/builders';
import { estimateTokens, storedTokens } from '../tokens';
import { evaluateTrigger } from '../triggers';
import { usableTokens } from '../trigger-threshold';
import { applyMediaBudget, isImage, mediaBudgetOf, mediaBudgetSavings, type ViewImage } from './budget';
import { imageTokens } from './media-tokens';
import { formatMediaReference } from './reference';

/** A 4K screenshot as an Opus 4.7+ session counts it: 4,784 tokens. */
const SHOT_TOKENS = imageTokens(3840, 2160, 'anthropic-high');
const shot = (n: number): FilePart => ({
  type: 'file',
  mime: 'image/png',
  filename: `screen-${n}.png`,
  url: formatMediaReference({
    sha256: n.toString(16).padStart(64, '0'),
    bytes: 900_000,
    width: 3840,
    height: 2160,
  }),
  tokens: SHOT_TOKENS,
});

/** The goal, then `shots` turns of a screenshot call, its image and what the agent read off it. */
function screenshotSession(shots: number): Message[] {
  const turns: Message[] = [user('Fix the settings page layout: the save button overlaps the footer.')];
  for (let n = 1; n <= shots; n++) {
    turns.push(
      assistant([
        toolCall('screenshot', { page: `/settings/${n}` }, `Saved screenshot of /settings/${n} (3840×2160).`),
        shot(n),
      ]),
      assistant(`Page ${n}: the footer starts at y=${2000 + n}; the button is ${n} px too low.`),
    );
  }
  return conversation(turns);
}

const texts = (view: readonly Message[]) =>
  view.flatMap((m) =>
    m.parts.flatMap((p) =>
      p.type === 'text' && !p.text.startsWith('[Older image')
        ? [p.text]
        : p.type === 'tool'
          ? [p.output]
          : [],
    ),
  );
const images = (view: readonly Message[]) => view.flatMap((m) => m.parts.filter(isImage));

const claude = model(200_000, 32_000);
const policy = resolvePolicy({});
const usable = usableTokens(claude, policy)!;

describe('the trigger counts the view as served: images past the media budget as markers', () => {
  const view = screenshotSession(60);

  it('does not compact a session that is over its window only because of old screenshots', () => {
    expect(storedTokens(view)).toBeGreaterThan(claude.contextWindow);
    const media = mediaBudgetOf(policy, usable);
    const counted = evaluateTrigger({ messages: view, model: claude, policy, media });
    const served = applyMediaBudget(view, media).messages;
    expect(counted.compact).toBe(false);
    expect(counted.tokens).toBe(storedTokens(served));
    expect(counted.tokens).toBeLessThan(usable);
    // Every text survives; only old images became markers.
    expect(texts(served)).toEqual(texts(view));
    expect(images(served).length).toBe(Math.floor(media.keepTokens / SHOT_TOKENS));
    // Without the budget the same session would be compacted (its text summarised).
    expect(evaluateTrigger({ messages: view, model: claude, policy }).compact).toBe(true);
  });

  it('keeps the kept images to half the usable input, whatever keepTokens says', () => {
    const small = model(16_000, 4_000);
    const smallUsable = usableTokens(small, policy)!;
    const budget = mediaBudgetOf({ media: { keepImages: 50, keepTokens: 1_000_000 } }, smallUsable);
    expect(budget.keepTokens).toBe(Math.floor(smallUsable / 2));
    const served = applyMediaBudget(view, budget).messages;
    expect(storedTokens(images(served).map((part) => ({ ...view[0]!, parts: [part] })))).toBeLessThanOrEqual(
      smallUsable / 2,
    );
    expect(mediaBudgetOf({ media: { keepTokens: 1_000 } }, smallUsable).keepTokens).toBe(1_000);
    expect(mediaBudgetOf({}, null).keepTokens).toBe(40_000);
  });

  it('finds from the images alone what the budget takes off (the status does not load the view)', () => {
    const newestFirst: ViewImage[] = [];
    for (const m of [...view].reverse())
      m.parts.forEach((part, index) => {
        if (!isImage(part)) return;
        const before = m.parts[index - 1];
        newestFirst.push({
          seq: m.seq,
          messageId: m.id,
          callId: before?.type === 'tool' ? before.callId : null,
          part,
        });
      });
    for (const budget of [mediaBudgetOf(policy, usable), { keepImages: 3, keepTokens: 100_000 }]) {
      const applied = applyMediaBudget(view, budget);
      const afterSeq = view[60]!.seq;
      const savings = mediaBudgetSavings(newestFirst, budget, afterSeq);
      expect(savings.elided).toBe(applied.elided);
      expect(savings.savedTokens).toBe(applied.savedTokens);
      expect(savings.savedTokens).toBe(storedTokens(view) - storedTokens(applied.messages));
      expect(savings.savedAfter).toBe(
        storedTokens(view.slice(61)) - storedTokens(applied.messages.slice(61)),
      );
    }
  });
});

describe('the read-time fit leaves out old images before any text', () => {
  const count: FitCounters = {
    text: (value) => estimateTokens(value),
    input: (input) => estimateTokens(JSON.stringify(input)),
  };
  const options = (budgetTokens: number): ReadFitOptions => ({
    budgetTokens,
    pruning: policy.pruning,
    pinSystemMessages: true,
    markerBudgetTokens: 400,
    at: '2026-01-01T00:00:00.000Z',
    count,
  });
  const view = screenshotSession(12);

  it('serves every text and tool output, the newest images, and markers for the oldest', () => {
    const budget = storedTokens(view) - 5 * SHOT_TOKENS;
    const fitted = fitViewForRead(view, options(budget));
    expect(fitted.fits).toBe(true);
    expect([fitted.images, fitted.cleared, fitted.clamped, fitted.dropped]).toEqual([6, 0, 0, 0]);
    expect(texts(fitted.messages)).toEqual(texts(view));
    expect(images(fitted.messages).map((p) => p.filename)).toEqual(
      [7, 8, 9, 10, 11, 12].map((n) => `screen-${n}.png`),
    );
    const marker = fitted.messages[1]!.parts[1]!;
    expect(marker).toMatchObject({ type: 'text' });
    expect(marker.type === 'text' && marker.text).toMatch(
      /^\[Older image screen-1\.png not shown \(image\/png, 3840×2160 px, 879 KB\), message m2, after call call_2_0; media id /,
    );
  });

  it('goes on to the text only once every image but the newest is a marker', () => {
    const fitted = fitViewForRead(view, options(SHOT_TOKENS + 300));
    expect(fitted.images).toBe(11);
    expect(images(fitted.messages).map((p) => p.filename)).toEqual(['screen-12.png']);
    expect(fitted.cleared + fitted.dropped).toBeGreaterThan(0);
  });

  it('does nothing to a view that fits', () => {
    const fitted = fitViewForRead(view, options(storedTokens(view)));
    expect([fitted.images, fitted.cleared, fitted.dropped]).toEqual([0, 0, 0]);
    expect(fitted.messages).toEqual(view);
  });
});
