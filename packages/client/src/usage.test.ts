import { describe, expect, it } from 'vitest';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { ResponseUsage } from 'openai/resources/responses/responses';
import { UsageSchema } from '@compactor/contract';
import { usageFromAnthropic, usageFromOpenAI, type CompactorUsage } from './usage.js';

const usage = (input: number, output: number, reasoning = 0, cacheRead = 0, cacheWrite = 0) =>
  ({ input, output, reasoning, cacheRead, cacheWrite }) satisfies CompactorUsage;

describe('usageFromOpenAI', () => {
  it.each([
    [
      'a Chat Completions answer without cache',
      { prompt_tokens: 1_117, completion_tokens: 46, total_tokens: 1_163 },
      usage(1_117, 46),
    ],
    [
      // The double count of issue 36: 14,608 would be 7,304 + 7,304 sent as input and cacheRead.
      'a Chat Completions answer that read 7,168 of its 7,304 prompt tokens from the cache',
      {
        prompt_tokens: 7_304,
        completion_tokens: 212,
        total_tokens: 7_516,
        prompt_tokens_details: { cached_tokens: 7_168, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 128,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
      usage(136, 212, 128, 7_168),
    ],
    [
      // OpenAI charges cache writes as input: they stay in input, counted once (cacheWrite 0).
      'a Chat Completions answer that also reports cache writes',
      {
        prompt_tokens: 3_000,
        completion_tokens: 10,
        prompt_tokens_details: { cached_tokens: 1_024, cache_write_tokens: 1_500 },
      },
      usage(1_976, 10, 0, 1_024),
    ],
    [
      'a Responses API answer with cache and reasoning',
      {
        input_tokens: 9_845,
        input_tokens_details: { cached_tokens: 9_600, cache_write_tokens: 0 },
        output_tokens: 1_330,
        output_tokens_details: { reasoning_tokens: 1_024 },
        total_tokens: 11_175,
      } satisfies ResponseUsage,
      usage(245, 1_330, 1_024, 9_600),
    ],
    [
      'a proxy with null details',
      {
        prompt_tokens: 500,
        completion_tokens: 20,
        prompt_tokens_details: null,
        completion_tokens_details: null,
      },
      usage(500, 20),
    ],
    [
      'garbage: negative, fractional, NaN and a string',
      {
        prompt_tokens: 1_000.6,
        completion_tokens: -3,
        prompt_tokens_details: { cached_tokens: Number.NaN },
        completion_tokens_details: { reasoning_tokens: '12' as unknown as number },
      },
      usage(1_001, 0),
    ],
    [
      'more cached tokens than the prompt holds, more reasoning than output',
      {
        prompt_tokens: 100,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 250 },
        completion_tokens_details: { reasoning_tokens: 9 },
      },
      usage(0, 5, 5, 100),
    ],
    ['an answer without usage', undefined, usage(0, 0)],
    ['null', null, usage(0, 0)],
    [
      'a count beyond what Postgres holds',
      { prompt_tokens: 1e12, completion_tokens: 1 },
      usage(2_147_483_647, 1),
    ],
  ])('%s', (_name, provider, expected) => {
    const mapped = usageFromOpenAI(provider);
    expect(mapped).toEqual(expected);
    // The API accepts it as it is.
    expect(UsageSchema.parse(mapped)).toEqual(mapped);
  });

  it('takes the openai package’s own ChatCompletion usage as it is typed', () => {
    const completion = {
      usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    } as Pick<ChatCompletion, 'usage'>;
    expect(usageFromOpenAI(completion.usage)).toEqual(usage(12, 3));
  });

  it('keeps the whole prompt: input + cacheRead + cacheWrite = prompt_tokens', () => {
    const mapped = usageFromOpenAI({
      prompt_tokens: 6_512,
      completion_tokens: 80,
      prompt_tokens_details: { cached_tokens: 6_400, cache_write_tokens: 64 } as { cached_tokens: number },
    });
    expect(mapped.input + mapped.cacheRead + mapped.cacheWrite).toBe(6_512);
  });

  it('rounds half up, as the Python client does', () => {
    expect(usageFromOpenAI({ prompt_tokens: 2.5, completion_tokens: 0.5 })).toEqual(usage(3, 1));
  });
});

describe('usageFromAnthropic', () => {
  it.each([
    [
      'a Messages answer without cache',
      {
        input_tokens: 2_095,
        output_tokens: 503,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: null,
      },
      usage(2_095, 503),
    ],
    [
      // input_tokens already leaves the cache out: nothing is subtracted.
      'a Messages answer that read 6,400 tokens from the cache',
      {
        input_tokens: 112,
        output_tokens: 318,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 6_400,
        service_tier: 'standard',
      },
      usage(112, 318, 0, 6_400),
    ],
    [
      'a Messages answer that wrote a cache breakpoint',
      {
        input_tokens: 21,
        output_tokens: 1_024,
        cache_creation_input_tokens: 5_910,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 5_910, ephemeral_1h_input_tokens: 0 },
      },
      usage(21, 1_024, 0, 0, 5_910),
    ],
    [
      'a streaming message_start without cache fields',
      { input_tokens: 472, output_tokens: 1 },
      usage(472, 1),
    ],
    ['garbage', { input_tokens: -1, output_tokens: 2.4, cache_read_input_tokens: Infinity }, usage(0, 2)],
    ['no usage', undefined, usage(0, 0)],
  ])('%s', (_name, provider, expected) => {
    const mapped = usageFromAnthropic(provider);
    expect(mapped).toEqual(expected);
    expect(UsageSchema.parse(mapped)).toEqual(mapped);
  });
});
