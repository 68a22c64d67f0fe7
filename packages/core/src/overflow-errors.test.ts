import { describe, expect, it } from 'vitest';
import { detectOverflowError, type ProviderErrorReport } from './overflow-errors';
import { NOT_OVERFLOW_ERRORS, OVERFLOW_ERRORS } from './overflow-errors.fixtures';

/** Opal's 17 strings (REFERENCE.md), matched the way Opal matches them: case-insensitive substrings. */
const OPAL_STRINGS = [
  'context_length_exceeded',
  'maximum context length',
  'max_tokens',
  'max_prompt_tokens',
  'too many tokens',
  'prompt is too long',
  'prompt_tokens_exceeded',
  'request too large',
  'context window',
  'token limit',
  'exceeds the limit',
  'input too long',
  "exceeds the model's maximum",
  'reduce the length',
  'maximum number of tokens',
  'content_too_large',
  'string_above_max_length',
] as const;

function opalMatches(report: ProviderErrorReport): boolean {
  const text = `${report.message ?? ''}\n${report.body ?? ''}`.toLowerCase();
  return OPAL_STRINGS.some((needle) => text.includes(needle));
}

describe('detectOverflowError on real provider errors', () => {
  it('has at least 30 overflows and 20 non-overflows, uniquely named', () => {
    expect(OVERFLOW_ERRORS.length).toBeGreaterThanOrEqual(30);
    expect(NOT_OVERFLOW_ERRORS.length).toBeGreaterThanOrEqual(20);
    const names = [...OVERFLOW_ERRORS, ...NOT_OVERFLOW_ERRORS].map((fixture) => fixture.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(OVERFLOW_ERRORS.map((fixture) => [fixture.name, fixture] as const))(
    'overflow: %s',
    (_name, fixture) => {
      const detection = detectOverflowError(fixture.report);
      expect(detection.overflow).toBe(true);
      expect(detection.matched).not.toBeNull();
      expect(detection.excludedBy).toBeNull();
    },
  );

  it.each(NOT_OVERFLOW_ERRORS.map((fixture) => [fixture.name, fixture] as const))(
    'not an overflow: %s',
    (_name, fixture) => {
      const detection = detectOverflowError(fixture.report);
      expect(detection.overflow).toBe(false);
      expect(detection.matched).toBeNull();
    },
  );

  it("is more precise than Opal's substring match and catches more", () => {
    const opalFalsePositives = NOT_OVERFLOW_ERRORS.filter((fixture) => opalMatches(fixture.report));
    const opalMisses = OVERFLOW_ERRORS.filter((fixture) => !opalMatches(fixture.report));
    // Throttling, TPM limits, max_tokens parameter errors, a parameter's string cap: Opal compacts on all of them.
    expect(opalFalsePositives.length).toBeGreaterThanOrEqual(8);
    expect(opalMisses.length).toBeGreaterThanOrEqual(10);
    for (const fixture of [...opalFalsePositives, ...opalMisses]) {
      expect(detectOverflowError(fixture.report).overflow).toBe(OVERFLOW_ERRORS.includes(fixture));
    }
  });
});

describe("Opal's 17 strings, as bare messages", () => {
  it.each(OPAL_STRINGS.filter((needle) => needle !== 'max_tokens'))('%s is an overflow', (needle) => {
    expect(detectOverflowError({ message: `Error: ${needle}` }).overflow).toBe(true);
  });

  it('max_tokens alone is a parameter error, not an overflow (far too broad)', () => {
    expect(detectOverflowError({ message: 'max_tokens' })).toEqual({
      overflow: false,
      matched: null,
      excludedBy: 'output token parameter',
    });
  });
});

describe('what decides', () => {
  it.each<[string, ProviderErrorReport, string]>([
    [
      'Bedrock throttling mentions too many tokens',
      { message: 'ThrottlingException: Too many tokens, please wait before trying again.' },
      'rate limit',
    ],
    [
      'OpenAI TPM says request too large',
      { status: 429, message: 'Request too large for gpt-4o on tokens per min (TPM)' },
      'status 429',
    ],
    ['a 429 that quotes an overflow wording', { status: 429, message: 'prompt is too long' }, 'status 429'],
    ['auth status wins over any text', { status: 401, message: 'prompt is too long' }, 'status 401'],
    ['quota', { message: 'You exceeded your current quota' }, 'quota or billing'],
    ['content filter', { message: 'content_filter: prompt too long' }, 'content policy'],
    [
      'max_tokens without a context wording',
      { message: 'max_tokens is too large: 100000' },
      'output token parameter',
    ],
    [
      'Groq: context_window named by a max_tokens error',
      {
        message:
          '`max_tokens` must be less than or equal to `8192`, the maximum value for `max_tokens` is less than the `context_window` for this model',
      },
      'output token parameter',
    ],
  ])('%s → excluded by %s', (_name, report, excludedBy) => {
    expect(detectOverflowError(report)).toEqual({ overflow: false, matched: null, excludedBy });
  });

  it.each<[string, ProviderErrorReport, string]>([
    [
      'Anthropic: max_tokens with an explicit context wording',
      { message: 'input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000' },
      'exceeds the context window',
    ],
    [
      'vLLM: output tokens with maximum context length',
      {
        message:
          "This model's maximum context length is 8192 tokens. However, you requested 4096 output tokens",
      },
      'maximum context length',
    ],
    [
      'the message is read before the body',
      { message: 'prompt is too long: 1 > 0', body: '{"code":"context_length_exceeded"}' },
      'prompt is too long',
    ],
    ['status 400 and nothing else', { status: 400 }, 'status 400 (no body)'],
    [
      'status 400 with an empty body',
      { status: 400, message: 'Bad Request', body: '' },
      'status 400 (no body)',
    ],
    ['status 413 and nothing else', { status: 413 }, 'status 413 (no body)'],
    ['status 413 with an unknown body', { status: 413, body: 'too big' }, 'status 413'],
    ['SDK message for a bare 400', { message: '400 status code (no body)' }, 'no body'],
  ])('%s → %s', (_name, report, matched) => {
    expect(detectOverflowError(report)).toEqual({ overflow: true, matched, excludedBy: null });
  });

  it.each<[string, ProviderErrorReport]>([
    ['nothing at all', {}],
    ['a 500', { status: 500 }],
    [
      'a 400 with an unrelated body',
      { status: 400, body: '{"error":{"message":"messages: at least one message is required"}}' },
    ],
    ['nulls', { message: null, status: null, body: null }],
  ])('%s is not an overflow', (_name, report) => {
    expect(detectOverflowError(report)).toEqual({ overflow: false, matched: null, excludedBy: null });
  });
});

describe('an overflow wording or an impossible request wins over rate-limit words', () => {
  it.each<[string, ProviderErrorReport, string]>([
    [
      'prompt is too long, with a pointer to the rate-limit docs',
      { status: 400, message: 'prompt is too long: 215000 tokens > 200000 maximum. See rate limits docs' },
      'prompt is too long',
    ],
    [
      "Groq's 413: Limit 6000, Requested 7000",
      {
        status: 413,
        message: 'Request too large for model m on tokens per minute (TPM): Limit 6000, Requested 7000',
      },
      'requested more than the limit',
    ],
    [
      'a 429 whose one request is above the limit',
      { status: 429, message: 'Request too large on tokens per min (TPM): Limit 30000, Requested 34307.' },
      'requested more than the limit',
    ],
  ])('%s → overflow (%s)', (_name, report, matched) => {
    expect(detectOverflowError(report)).toEqual({ overflow: true, matched, excludedBy: null });
  });

  it.each<[string, ProviderErrorReport, string]>([
    [
      'a rate limit whose request fits: Limit 50000, Used 47949, Requested 3006',
      { message: 'Rate limit reached on tokens per min (TPM): Limit 50000, Used 47949, Requested 3006.' },
      'rate limit',
    ],
    [
      'a 429 at exactly the limit: Limit 6000, Requested 6000',
      { status: 429, message: 'Request too large on tokens per minute (TPM): Limit 6000, Requested 6000' },
      'status 429',
    ],
  ])('%s → not an overflow (%s)', (_name, report, excludedBy) => {
    expect(detectOverflowError(report)).toEqual({ overflow: false, matched: null, excludedBy });
  });
});
