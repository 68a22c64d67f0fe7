import { describe, expect, it } from 'vitest';
import { excerptText } from './excerpt';
import { CLAMPED_INPUT_KEY, fitKeptMessages, MIN_EXCERPT_TOKENS, type FitCounters } from './fit';
import type { Message, ToolPart } from './model';
import { assistant, conversation, text, toolPart, user } from './test-support/builders';
import { estimateTokens, messageTokens } from './tokens';

// A deterministic stand-in for the tokenizer: four characters a token, as core's estimate.
const count: FitCounters = {
  text: (value) => estimateTokens(value),
  input: (input) => estimateTokens(JSON.stringify(input)),
};

/** A tool part whose output is `chars` characters of log, counted by `count`. */
function log(callId: string, chars: number, extras: Partial<ToolPart> = {}): ToolPart {
  const output = 'GET /api/invoices 200 12ms\n'.repeat(Math.ceil(chars / 27)).slice(0, chars);
  const outputTokens = estimateTokens(output);
  return { ...toolPart('bash', outputTokens, { callId, output }), tokens: outputTokens + 10, ...extras };
}

const total = (messages: Message[]) => messages.reduce((sum, m) => sum + messageTokens(m), 0);

describe('excerptText', () => {
  const marker = (omitted: number) => `[... ${omitted} characters left out]`;
  const body = Array.from({ length: 2000 }, (_, i) => `line ${i}`).join('\n');
  const options = { textTokens: estimateTokens(body), count: count.text, marker };

  it('returns a text that fits unchanged', () => {
    expect(excerptText('short', 100, { ...options, textTokens: 2 })).toEqual({ text: 'short', tokens: 2 });
  });

  it('keeps the head and the tail around the marker, within the budget and close to it', () => {
    const excerpt = excerptText(body, 500, options);
    expect(excerpt.tokens).toBeLessThanOrEqual(500);
    expect(excerpt.tokens).toBeGreaterThanOrEqual(490);
    expect(excerpt.text.startsWith('line 0\nline 1\n')).toBe(true);
    expect(excerpt.text.endsWith('line 1998\nline 1999')).toBe(true);
    const omitted = Number(/\[\.\.\. (\d+) characters left out\]/.exec(excerpt.text)![1]);
    expect(excerpt.text.length - marker(omitted).length - 2 + omitted).toBe(body.length);
  });

  it('is the marker alone when the budget is smaller than the marker', () => {
    expect(excerptText(body, 3, options)).toEqual({
      text: marker(body.length),
      tokens: count.text(marker(body.length)),
    });
  });

  it('never splits a surrogate pair', () => {
    const emoji = '😀'.repeat(5000);
    const excerpt = excerptText(emoji, 300, { textTokens: estimateTokens(emoji), count: count.text, marker });
    expect(excerpt.text).not.toMatch(
      /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
    );
    expect(excerpt.tokens).toBeLessThanOrEqual(300);
  });
});

describe('fitKeptMessages', () => {
  const options = { fixedTokens: 1000, targetTokens: 8000, limitTokens: 10_000, count };

  it('clamps nothing when the view is within the target', () => {
    const kept = conversation([user('fix it', 100), assistant([log('a', 8000)])]);
    expect(fitKeptMessages(kept, options)).toMatchObject({
      clamps: [],
      fits: true,
      tokensAfter: 1000 + total(kept),
    });
  });

  it('shows a giant output in the newest turn as an excerpt with its size and call id', () => {
    const kept = conversation([
      user('read the log', 100),
      assistant([text('reading', 5), log('read-log', 600_000)]),
    ]);
    const fit = fitKeptMessages(kept, options);
    expect(fit.fits).toBe(true);
    expect(fit.tokensAfter).toBeLessThanOrEqual(8000);
    expect(fit.clamps).toHaveLength(1);
    const [clamp] = fit.clamps;
    expect(clamp).toMatchObject({ messageId: kept[1]!.id, seq: 2, index: 1, field: 'output' });
    const part = clamp!.part as ToolPart;
    expect(part.output).toMatch(/^GET \/api\/invoices 200 12ms\n/);
    expect(part.output).toMatch(
      /\[\.\.\. tool output clamped to fit the context window: [\d,]+ of 600,000 characters, 150,000 tokens left out; call read-log\]/,
    );
    expect(part.tokens).toBe(part.outputTokens + 10);
    expect(clamp!.tokensBefore - clamp!.tokensAfter).toBe(fit.tokensBefore - fit.tokensAfter);
  });

  it('clamps the oldest oversized output first and spares the newest when that suffices', () => {
    // 1,000 fixed + 6,010 + 3,010: the older output alone gives up the 2,030 the target needs.
    const kept = conversation([
      user('go', 10),
      assistant([log('old', 24_000)]),
      assistant([log('new', 12_000)]),
    ]);
    const fit = fitKeptMessages(kept, options);
    expect(fit.clamps.map((c) => (c.part as ToolPart).callId)).toEqual(['old']);
    expect(fit.tokensAfter).toBeLessThanOrEqual(8000);
    // It loses what the target needs, not everything down to the cap.
    expect(fit.tokensAfter).toBeGreaterThan(7800);
  });

  it('cuts equally oversized outputs alike before either goes below half the room', () => {
    const kept = conversation([
      user('go', 10),
      assistant([log('old', 24_000)]),
      assistant([log('new', 24_000)]),
    ]);
    const fit = fitKeptMessages(kept, options);
    expect(fit.clamps.map((c) => (c.part as ToolPart).callId)).toEqual(['old', 'new']);
    for (const clamp of fit.clamps)
      expect((clamp.part as ToolPart).outputTokens).toBeGreaterThanOrEqual(3400);
  });

  it('clamps tool outputs before texts', () => {
    const kept = conversation([user('x'.repeat(20_000)), assistant([log('out', 20_000)])]);
    const fit = fitKeptMessages(kept, { ...options, targetTokens: 7000 });
    expect(fit.clamps.map((c) => c.field)).toEqual(['output']);
  });

  it('clamps a pasted text larger than the window, keeping its beginning', () => {
    const pasted = `please review:\n${'lorem ipsum dolor sit amet\n'.repeat(20_000)}`;
    const kept = conversation([user(pasted, estimateTokens(pasted))]);
    const fit = fitKeptMessages(kept, options);
    expect(fit.clamps).toMatchObject([{ field: 'text' }]);
    const shown = fit.clamps[0]!.part;
    expect(shown.type === 'text' && shown.text.startsWith('please review:\nlorem ipsum')).toBe(true);
    expect(fit.tokensAfter).toBeLessThanOrEqual(8000);
  });

  it('clamps huge arguments last, in place: the file path stays, the content is an excerpt', () => {
    const content = 'export const x = "a\\b";\n'.repeat(20_000);
    const input = { path: 'src/big.ts', content };
    const tokens = 2 + count.input(input) + 5;
    const write: ToolPart = { ...toolPart('write', 5, { callId: 'w', input, output: 'ok' }), tokens };
    const fit = fitKeptMessages(conversation([user('write it', 10), assistant([write])]), options);
    expect(fit.clamps).toMatchObject([{ field: 'input', fields: ['input'] }]);
    const shown = fit.clamps[0]!.part as ToolPart;
    const args = shown.input as { path: string; content: string };
    expect(args.path).toBe('src/big.ts');
    expect(args.content).toMatch(/^export const x/);
    expect(args.content).toMatch(
      /\[\.\.\. argument "content" clamped to fit the context window: .*; call w\]/,
    );
    // Counted as the store counts arguments (escapes included), within what the fit needed.
    expect(shown.tokens).toBe(2 + count.input(shown.input) + 5);
    expect(fit.fits).toBe(true);
    expect(fit.tokensAfter).toBeLessThanOrEqual(8000);
  });

  it('wraps arguments that are not an object of strings', () => {
    const input = 'x'.repeat(100_000);
    const call: ToolPart = {
      ...toolPart('run', 5, { callId: 'r', input, output: 'ok' }),
      tokens: 2 + count.input(input) + 5,
    };
    const fit = fitKeptMessages(conversation([user('run it', 10), assistant([call])]), options);
    const shown = fit.clamps[0]!.part as ToolPart;
    expect(Object.keys(shown.input as object)).toEqual([CLAMPED_INPUT_KEY]);
    expect(fit.tokensAfter).toBeLessThanOrEqual(8000);
  });

  it('keeps the arguments of a call still running whole', () => {
    const input = { content: 'y'.repeat(100_000) };
    const running: ToolPart = {
      ...toolPart('write', 0, { callId: 'r', input, status: 'running' }),
      tokens: 2 + count.input(input),
    };
    const fit = fitKeptMessages(conversation([user('go', 10), assistant([running])]), options);
    expect(fit.clamps).toEqual([]);
    expect(fit.fits).toBe(false);
  });

  it('clamps two fields of one part together, each counted once', () => {
    const output = 'row\n'.repeat(40_000);
    const input = { path: 'big.csv', content: 'z'.repeat(40_000) };
    const outputTokens = estimateTokens(output);
    const part: ToolPart = {
      ...toolPart('write', outputTokens, { callId: 'both', input, output }),
      tokens: 2 + count.input(input) + outputTokens,
    };
    const fit = fitKeptMessages(conversation([user('go', 10), assistant([part])]), {
      ...options,
      targetTokens: 3000,
    });
    expect(fit.clamps).toHaveLength(1);
    expect(fit.clamps[0]!.fields).toEqual(['output', 'input']);
    const shown = fit.clamps[0]!.part as ToolPart;
    expect(shown.output).toMatch(/tool output clamped/);
    expect((shown.input as { content: string }).content).toMatch(/argument "content" clamped/);
    expect(shown.tokens).toBe(2 + count.input(shown.input) + shown.outputTokens);
    expect(fit.tokensAfter).toBe(1000 + 10 + shown.tokens);
  });

  it('clamps a huge tool error like a text', () => {
    const error = 'Traceback (most recent call last):\n'.repeat(5000);
    const failed: ToolPart = {
      ...toolPart('bash', 0, { callId: 'e', status: 'error', error }),
      tokens: 10 + estimateTokens(error),
    };
    const fit = fitKeptMessages(conversation([user('run', 10), assistant([failed])]), options);
    expect(fit.clamps).toMatchObject([{ field: 'error' }]);
    expect(fit.tokensAfter).toBeLessThanOrEqual(8000);
  });

  it('when the target cannot be reached, settles for the limit with excerpts no smaller than the minimum', () => {
    // 60 outputs of 1,000 tokens: at the 64-token minimum they still take 60 × 74 = 4,440 + 1,000.
    const kept = conversation([
      user('go', 10),
      ...Array.from({ length: 60 }, (_, i) => assistant([log(`c${i}`, 4000)])),
    ]);
    const fit = fitKeptMessages(kept, { ...options, targetTokens: 2000, limitTokens: 6000 });
    expect(fit.fits).toBe(true);
    expect(fit.tokensAfter).toBeGreaterThan(2000);
    expect(fit.tokensAfter).toBeLessThanOrEqual(6000);
    for (const clamp of fit.clamps)
      expect((clamp.part as ToolPart).outputTokens).toBeLessThanOrEqual(MIN_EXCERPT_TOKENS);
  });

  it('reduces parts to their markers when even the minimum excerpts exceed the limit', () => {
    const kept = conversation([
      user('go', 10),
      ...Array.from({ length: 60 }, (_, i) => assistant([log(`c${i}`, 4000)])),
    ]);
    const fit = fitKeptMessages(kept, {
      ...options,
      fixedTokens: 1000,
      targetTokens: 2000,
      limitTokens: 3500,
    });
    expect(fit.fits).toBe(true);
    expect(fit.tokensAfter).toBeLessThanOrEqual(3500);
    expect(fit.clamps.some((c) => !(c.part as ToolPart).output!.startsWith('GET'))).toBe(true);
  });

  it('says it does not fit when the fixed part alone exceeds the limit', () => {
    const kept = conversation([user('go', 10), assistant([log('a', 40_000)])]);
    const fit = fitKeptMessages(kept, { ...options, fixedTokens: 12_000 });
    expect(fit.fits).toBe(false);
  });
});
