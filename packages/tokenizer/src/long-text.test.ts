import { describe, expect, it } from 'vitest';
import { referenceCount } from './test-support/reference';
import { sampleText } from './test-support/sample-text';
import { getTokenizer } from './tokenizer';

// The reference is quadratic on a piece, so a 100,000-letter run is out of its reach (~15 s).
// A run of one letter has a structure we can check instead: "aaaaaaaa" is a token of both
// encodings and "a"×16 is not, and BPE merges ties leftmost first, so the run becomes tokens of 8
// letters from the left with a short tail at the end. Far from the end, 8 more letters are one
// more token: `tokens(a×n) = tokens(a×m) + (n − m) / 8` when n ≡ m (mod 8). The first test checks
// that recurrence against tiktoken itself; the others rely on it.
const RUN_LETTER = 'a';
const RUN_PERIOD = 8;
const VERIFIED_RUN_LENGTH = 1000;
const LONG_RUN_LENGTH = 100_000;

function runTokens(encoding: 'o200k_base' | 'cl100k_base', length: number): number {
  const stepsOfEight = (length - VERIFIED_RUN_LENGTH) / RUN_PERIOD;
  if (!Number.isInteger(stepsOfEight))
    throw new Error(`run length ${length} is not ${VERIFIED_RUN_LENGTH} mod 8`);
  return referenceCount(encoding, RUN_LETTER.repeat(VERIFIED_RUN_LENGTH)) + stepsOfEight;
}

/** Resolves `work` while counting how many times a setImmediate callback got to run meanwhile. */
async function countEventLoopTurns<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = (): void => {
    if (done) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await work(), turns };
  } finally {
    done = true;
  }
}

describe.each(['o200k_base', 'cl100k_base'] as const)('%s on long texts', (encoding) => {
  const tokenizer = getTokenizer(encoding);

  it('a run of one letter gains one token per 8 letters, per tiktoken', () => {
    for (let length = VERIFIED_RUN_LENGTH; length < VERIFIED_RUN_LENGTH + 4 * RUN_PERIOD; length++) {
      const run = RUN_LETTER.repeat(length);
      const eightMore = referenceCount(encoding, run + RUN_LETTER.repeat(RUN_PERIOD));
      expect(eightMore).toBe(referenceCount(encoding, run) + 1);
      expect(tokenizer.countSync(run)).toBe(referenceCount(encoding, run));
    }
    expect(tokenizer.countSync(RUN_LETTER.repeat(3000))).toBe(runTokens(encoding, 3000));
  });

  it('counts 1 MB with a 100,000-letter run exactly, yielding to the event loop', async () => {
    // Newlines around the run keep it one piece of its own, so the text's count is the sum of
    // its three parts' counts (the split patterns look ahead one character and never behind).
    const before = sampleText(450_000, 1) + '\n';
    const after = '\n' + sampleText(450_000, 2);
    const text = before + RUN_LETTER.repeat(LONG_RUN_LENGTH) + after;
    const expected =
      referenceCount(encoding, before) +
      runTokens(encoding, LONG_RUN_LENGTH) +
      referenceCount(encoding, after);

    const { result, turns } = await countEventLoopTurns(() => tokenizer.count(text));
    expect(result).toBe(expected);
    expect(turns).toBeGreaterThanOrEqual(3);
    expect(tokenizer.countSync(text)).toBe(expected);
  });

  it('the sum-of-parts argument holds where tiktoken can check it whole', () => {
    const text = sampleText(2000, 3) + '\n' + RUN_LETTER.repeat(2000) + '\n' + sampleText(2000, 4);
    const parts =
      referenceCount(encoding, sampleText(2000, 3) + '\n') +
      referenceCount(encoding, RUN_LETTER.repeat(2000)) +
      referenceCount(encoding, '\n' + sampleText(2000, 4));
    expect(referenceCount(encoding, text)).toBe(parts);
    expect(tokenizer.countSync(text)).toBe(parts);
  });

  it('yields inside the merge of one huge piece', async () => {
    const run = RUN_LETTER.repeat(1_000_000);
    const { result, turns } = await countEventLoopTurns(() => tokenizer.count(run));
    expect(result).toBe(runTokens(encoding, 1_000_000));
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});

describe('aborting a count', () => {
  const tokenizer = getTokenizer();
  const longText = 'A'.repeat(1_000_000);

  it('rejects at once with an AbortError when the signal is already aborted', async () => {
    const reason = new Error('caller gave up');
    await expect(tokenizer.count('short', { signal: AbortSignal.abort(reason) })).rejects.toMatchObject({
      name: 'AbortError',
      cause: reason,
    });
  });

  it('stops a running count with an AbortError at its next yield', async () => {
    const controller = new AbortController();
    const counting = tokenizer.count(longText, { signal: controller.signal });
    let settled = false;
    counting.catch(() => undefined).finally(() => (settled = true));
    let turnsAfterAbort = 0;
    const tickUntilSettled = (): void => {
      if (settled) return;
      turnsAfterAbort++;
      setImmediate(tickUntilSettled);
    };
    setImmediate(() => {
      controller.abort();
      setImmediate(tickUntilSettled);
    });
    await expect(counting).rejects.toMatchObject({ name: 'AbortError' });
    // It gave up within a slice of the abort; finishing the text first would take dozens.
    expect(turnsAfterAbort).toBeLessThanOrEqual(2);
  });

  it('does not disturb counts that are not aborted', async () => {
    const controller = new AbortController();
    const aborted = tokenizer.count(longText, { signal: controller.signal });
    const other = tokenizer.count(longText);
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    await expect(other).resolves.toBe(tokenizer.countSync(longText));
  });
});
