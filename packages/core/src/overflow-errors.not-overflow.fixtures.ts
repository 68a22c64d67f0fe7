/**
 * Real provider errors that are not context overflows (see overflow-errors.fixtures.ts): rate
 * limits that mention tokens, output-budget parameter errors, auth, content policy and others.
 */
import type { OverflowFixture } from './overflow-errors.fixture-type';

const json = (value: unknown): string => JSON.stringify(value);

/** Errors that are not overflows: compacting would throw history away and not help. */
export const NOT_OVERFLOW_ERRORS: readonly OverflowFixture[] = [
  {
    name: 'OpenAI 429: rate limit reached on tokens per minute',
    source: 'OpenAI API rate_limit_exceeded',
    report: {
      status: 429,
      message:
        'Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM): Limit 50000, Used 47949, Requested 3006. Please try again in 1.146s. Visit https://platform.openai.com/account/rate-limits to learn more.',
    },
  },
  {
    name: 'OpenAI 429: insufficient quota',
    source: 'OpenAI API insufficient_quota',
    report: {
      status: 429,
      body: json({
        error: {
          message: 'You exceeded your current quota, please check your plan and billing details.',
          type: 'insufficient_quota',
          code: 'insufficient_quota',
        },
      }),
    },
  },
  {
    name: 'Anthropic 429: request tokens per-minute rate limit',
    source: 'Anthropic rate_limit_error',
    report: {
      body: json({
        type: 'error',
        error: {
          type: 'rate_limit_error',
          message: 'Number of request tokens has exceeded your per-minute rate limit',
        },
      }),
    },
  },
  {
    name: 'Anthropic 529: overloaded',
    source: 'Anthropic overloaded_error',
    report: {
      status: 529,
      body: json({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    },
  },
  {
    name: 'Amazon Bedrock: throttling, too many tokens',
    source: 'Bedrock ThrottlingException',
    report: { message: 'ThrottlingException: Too many tokens, please wait before trying again.' },
  },
  {
    name: 'Amazon Bedrock: throttling as formatted by pi',
    source: 'pi-mono formatBedrockError',
    report: { message: 'Throttling error: Too many tokens, please wait before trying again.' },
  },
  {
    name: 'Google Gemini 429: input token quota',
    source: 'Gemini API RESOURCE_EXHAUSTED',
    report: {
      status: 429,
      message:
        'You exceeded your current quota, please check your plan and billing details. * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-2.0-flash',
    },
  },
  {
    name: 'Azure OpenAI 429: token rate limit of the pricing tier',
    source: 'Azure OpenAI rate limit',
    report: {
      message:
        'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 60 seconds.',
    },
  },
  {
    name: '429 with no body',
    source: 'OpenAI SDK message for a bare 429 (klaude-code counts it; pi does not)',
    report: { status: 429, message: '429 status code (no body)' },
  },
  {
    name: 'OpenAI: max_tokens above the model output limit',
    source: 'OpenAI API invalid_value',
    report: {
      status: 400,
      message:
        'max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.',
    },
  },
  {
    name: 'Anthropic: max_tokens above the model output limit',
    source: 'Anthropic invalid_request_error',
    report: {
      status: 400,
      message:
        'max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5',
    },
  },
  {
    name: 'Groq: max_tokens must be less than or equal to',
    source: 'Groq invalid_request_error (param max_tokens)',
    report: {
      status: 400,
      body: json({
        error: {
          message:
            '`max_tokens` must be less than or equal to `8192`, the maximum value for `max_tokens` is less than the `context_window` for this model',
          type: 'invalid_request_error',
          param: 'max_tokens',
        },
      }),
    },
  },
  {
    name: 'OpenAI: max_tokens not supported, use max_completion_tokens',
    source: 'OpenAI API unsupported_parameter (reasoning models)',
    report: {
      status: 400,
      message:
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
    },
  },
  {
    name: 'DeepSeek: invalid max_tokens value',
    source: 'DeepSeek API',
    report: { status: 400, message: 'Invalid max_tokens value, the valid range of max_tokens is [1, 8192]' },
  },
  {
    name: 'Hugging Face TGI: max_new_tokens too large',
    source: 'text-generation-inference validation error',
    report: {
      status: 422,
      message: 'Input validation error: `max_new_tokens` must be <= 4096. Given: 20000',
    },
  },
  {
    name: 'OpenAI 401: incorrect API key',
    source: 'OpenAI API invalid_api_key',
    report: {
      status: 401,
      message:
        'Incorrect API key provided: sk-abc***. You can find your API key at https://platform.openai.com/account/api-keys.',
    },
  },
  {
    name: 'Anthropic 401: invalid x-api-key',
    source: 'Anthropic authentication_error',
    report: {
      status: 401,
      body: json({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }),
    },
  },
  {
    name: 'Google: API key not valid (status 400)',
    source: 'Gemini API INVALID_ARGUMENT',
    report: { status: 400, message: 'API key not valid. Please pass a valid API key.' },
  },
  {
    name: 'Anthropic: credit balance too low',
    source: 'Anthropic invalid_request_error',
    report: {
      status: 400,
      message:
        'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
    },
  },
  {
    name: 'Azure OpenAI: content management policy',
    source: 'Azure OpenAI content_filter',
    report: {
      status: 400,
      body: json({
        error: {
          message:
            "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
          code: 'content_filter',
        },
      }),
    },
  },
  {
    name: 'OpenAI: rejected by the safety system',
    source: 'OpenAI content_policy_violation',
    report: {
      status: 400,
      body: json({
        error: {
          message: 'Your request was rejected as a result of our safety system.',
          type: 'invalid_request_error',
          code: 'content_policy_violation',
        },
      }),
    },
  },
  {
    name: 'OpenAI: prompt_cache_key above its length cap',
    source: 'OpenAI string_above_max_length on a parameter',
    report: {
      status: 400,
      body: json({
        error: {
          message: 'Expected a string with maximum length 64, but got a string with length 65 instead.',
          type: 'invalid_request_error',
          param: 'prompt_cache_key',
          code: 'string_above_max_length',
        },
      }),
    },
  },
  {
    name: 'OpenAI: too many tools',
    source: 'OpenAI array_above_max_length',
    report: {
      status: 400,
      message:
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 140 instead.",
    },
  },
  {
    name: 'Anthropic: tool_use without tool_result',
    source: 'Anthropic invalid_request_error (orphaned tool call)',
    report: {
      status: 400,
      message:
        'messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A09q90qw90lq917835lq9. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    },
  },
  {
    name: 'OpenAI: tool_calls without tool messages',
    source: 'OpenAI invalid_request_error (orphaned tool call)',
    report: {
      status: 400,
      message:
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_abc123",
    },
  },
  {
    name: 'Anthropic: too many cache_control blocks',
    source: 'Anthropic invalid_request_error',
    report: { status: 400, message: 'A maximum of 4 blocks with cache_control may be provided. Found 5.' },
  },
  {
    name: 'Anthropic: image above 5 MB',
    source: 'Anthropic invalid_request_error',
    report: {
      status: 400,
      message:
        'messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 6291456 bytes > 5242880 bytes',
    },
  },
  {
    name: 'OpenAI 404: model does not exist',
    source: 'OpenAI model_not_found',
    report: {
      status: 404,
      message: 'The model `gpt-5-turbo` does not exist or you do not have access to it.',
    },
  },
  {
    name: 'Anthropic 500: internal server error',
    source: 'Anthropic api_error',
    report: {
      status: 500,
      body: json({ type: 'error', error: { type: 'api_error', message: 'Internal server error' } }),
    },
  },
  {
    name: 'network: connection error',
    source: 'OpenAI SDK APIConnectionError',
    report: { message: 'Connection error.' },
  },
];
