/**
 * Real provider error wordings for `detectOverflowError`, collected from provider docs, SDK
 * tests and public issue trackers (the `source` names where each wording comes from). Numbers
 * vary between occurrences; the wording is what matters. Shared with packages/llm's tests.
 */
import type { OverflowFixture } from './overflow-errors.fixture-type';

export type { OverflowFixture } from './overflow-errors.fixture-type';

const json = (value: unknown): string => JSON.stringify(value);

/** Context overflows: compacting and retrying fixes each of them. */
export const OVERFLOW_ERRORS: readonly OverflowFixture[] = [
  {
    name: 'OpenAI chat: messages resulted in too many tokens',
    source: 'OpenAI API (simonw/llm#392)',
    report: {
      status: 400,
      message:
        "This model's maximum context length is 4097 tokens. However, your messages resulted in 8285 tokens. Please reduce the length of the messages.",
      body: json({
        error: {
          message:
            "This model's maximum context length is 4097 tokens. However, your messages resulted in 8285 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      }),
    },
  },
  {
    name: 'OpenAI chat: messages plus completion',
    source: 'OpenAI API (sean1832/GPT-Brain#20)',
    report: {
      message:
        "This model's maximum context length is 4097 tokens. However, you requested 4431 tokens (3431 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    },
  },
  {
    name: 'OpenAI completions: prompt plus completion (older wording)',
    source: 'OpenAI API (run-llama/llama_index#948)',
    report: {
      message:
        "This model's maximum context length is 4097 tokens, however you requested 4116 tokens (3860 in your prompt; 256 for  the completion). Please reduce your prompt; or completion length.",
    },
  },
  {
    name: 'OpenAI Responses API: input exceeds the context window',
    source: 'OpenAI Responses API (pi-mono overflow.ts)',
    report: {
      status: 400,
      body: json({
        error: {
          type: 'invalid_request_error',
          code: 'context_length_exceeded',
          message:
            'Your input exceeds the context window of this model. Please adjust your input and try again.',
          param: 'input',
        },
      }),
    },
  },
  {
    name: 'OpenAI: bare error code only',
    source: 'OpenAI error code context_length_exceeded',
    report: { status: 400, body: json({ error: { code: 'context_length_exceeded', message: null } }) },
  },
  {
    name: 'OpenAI: one message above the per-string cap',
    source: 'OpenAI API (openai-python traceback)',
    report: {
      status: 400,
      message:
        "Invalid 'messages[0].content': string too long. Expected a string with maximum length 1048576, but got a string with length 1123800 instead.",
      body: json({
        error: {
          message:
            "Invalid 'messages[0].content': string too long. Expected a string with maximum length 1048576, but got a string with length 1123800 instead.",
          type: 'invalid_request_error',
          param: 'messages[0].content',
          code: 'string_above_max_length',
        },
      }),
    },
  },
  {
    name: 'Anthropic: prompt is too long',
    source: 'Anthropic Messages API (stackblitz-labs/bolt.diy#401)',
    report: {
      status: 400,
      message: 'prompt is too long: 202609 tokens > 200000 maximum',
      body: json({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'prompt is too long: 202609 tokens > 200000 maximum',
        },
      }),
    },
  },
  {
    name: 'Anthropic: input length and max_tokens exceed context limit',
    source: 'Anthropic Messages API (stackblitz/bolt.new#7414)',
    report: {
      status: 400,
      message:
        'input length and `max_tokens` exceed context limit: 188059 + 20000 > 200000, decrease input length or `max_tokens` and try again',
    },
  },
  {
    name: 'Anthropic: 413 request_too_large',
    source: 'Anthropic Messages API (pi-mono overflow.ts)',
    report: {
      status: 413,
      body: json({
        type: 'error',
        error: { type: 'request_too_large', message: 'Request exceeds the maximum size' },
      }),
    },
  },
  {
    name: 'Google Gemini: input token count exceeds the maximum',
    source: 'Gemini API (google-gemini/gemini-cli#12098)',
    report: {
      status: 400,
      body: json({
        error: {
          code: 400,
          message: 'The input token count (314175) exceeds the maximum number of tokens allowed (131072).',
          status: 'INVALID_ARGUMENT',
        },
      }),
    },
  },
  {
    name: 'Google Vertex: input token count without the number',
    source: 'Vertex AI Gemini (upstream body seen by proxies)',
    report: {
      message: 'The input token count exceeds the maximum number of tokens allowed 1048576.',
    },
  },
  {
    name: 'Google Gemini: request payload size exceeds the limit',
    source: 'Gemini API 400 INVALID_ARGUMENT',
    report: { status: 400, message: 'Request payload size exceeds the limit: 20971520 bytes.' },
  },
  {
    name: 'Amazon Bedrock: input is too long for requested model',
    source: 'Bedrock ValidationException (pi-mono overflow.ts)',
    report: { status: 400, message: 'Input is too long for requested model.' },
  },
  {
    name: 'xAI Grok: maximum prompt length',
    source: 'xAI API (pi-mono overflow.ts)',
    report: {
      status: 400,
      message: "This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
    },
  },
  {
    name: 'Groq: reduce the length of the messages',
    source: 'Groq API (pi-mono overflow.ts)',
    report: { status: 400, message: 'Please reduce the length of the messages or completion.' },
  },
  {
    name: 'OpenRouter: endpoint maximum context length',
    source: 'OpenRouter (refly-ai/refly#1177)',
    report: {
      status: 400,
      message:
        'This endpoint\'s maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
    },
  },
  {
    name: 'LiteLLM proxy wrapping OpenRouter',
    source: 'LiteLLM (topoteretes/cognee#1061)',
    report: {
      message:
        'litellm.BadRequestError: OpenrouterException - {"error":{"message":"This endpoint\'s maximum context length is 16384 tokens. However, you requested about 94307 tokens (94307 of text input). Please reduce the length of either one, or use the \\"middle-out\\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}',
    },
  },
  {
    name: 'LiteLLM: requested token count exceeds the maximum context length',
    source: 'OpenAI-compatible proxies (pi-mono overflow.ts)',
    report: { message: "Requested token count exceeds the model's maximum context length of 131072 tokens." },
  },
  {
    name: 'OpenAI-compatible: input length exceeds maximum context length',
    source: 'OpenAI-compatible servers (pi-mono overflow.ts)',
    report: {
      status: 400,
      message: "Input length (265330) exceeds model's maximum context length (262144).",
    },
  },
  {
    name: 'vLLM: requested output tokens plus prompt',
    source: 'vLLM >= 0.8 (pi-mono overflow.ts)',
    report: {
      status: 400,
      message:
        "This model's maximum context length is 131072 tokens. However, you requested 4096 output tokens and your prompt contains at least 126977 input tokens, for a total of at least 131073 tokens. Please reduce the length of the input prompt or the number of requested output tokens.",
    },
  },
  {
    name: 'vLLM: decoder prompt longer than the maximum model length',
    source: 'vLLM ValueError',
    report: { message: 'The decoder prompt (length 12324) is longer than the maximum model length of 8192.' },
  },
  {
    name: 'Hugging Face TGI: inputs tokens + max_new_tokens',
    source: 'text-generation-inference validation error',
    report: {
      status: 422,
      body: json({
        error:
          'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 100000. Given: 99500 `inputs` tokens and 1024 `max_new_tokens`',
        error_type: 'validation',
      }),
    },
  },
  {
    name: 'Hugging Face TGI: inputs must have less than',
    source: 'text-generation-inference validation error',
    report: { message: 'Input validation error: `inputs` must have less than 4096 tokens. Given: 5000.' },
  },
  {
    name: 'SageMaker / HF endpoint: your input is too long',
    source: 'SageMaker ModelError (run-llama/llama_index#7974)',
    report: {
      message:
        'ModelError: Your input is too long. Max input length is 4096 tokens, but you supplied 5441 tokens.',
    },
  },
  {
    name: 'Together AI: input longer than the context length',
    source: 'Together AI (pi-mono overflow.ts)',
    report: {
      status: 400,
      message: "The input (516368 tokens) is longer than the model's context length (200000 tokens).",
    },
  },
  {
    name: 'Cohere: too many tokens',
    source: 'Cohere generate API',
    report: {
      status: 400,
      message:
        'too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292. Try using a shorter prompt, or enabling prompt truncating. See https://docs.cohere.com/reference/generate for more details.',
    },
  },
  {
    name: 'Mistral: too large for model',
    source: 'Mistral API (pi-mono overflow.ts)',
    report: {
      status: 400,
      message: 'Prompt contains 240000 tokens, too large for model with 128000 maximum context length',
    },
  },
  {
    name: 'GitHub Copilot: prompt token count exceeds the limit',
    source: 'Copilot API 400',
    report: {
      status: 400,
      body: json({
        error: {
          message: 'prompt token count of 391491 exceeds the limit of 128000',
          code: 'model_max_prompt_tokens_exceeded',
        },
      }),
    },
  },
  {
    name: 'Kimi for Coding: exceeded model token limit',
    source: 'Moonshot Kimi (pi-mono overflow.ts)',
    report: { status: 400, message: 'Your request exceeded model token limit: 262144 (requested: 300000)' },
  },
  {
    name: 'MiniMax: context window exceeds limit',
    source: 'MiniMax (pi-mono overflow.ts)',
    report: { status: 400, message: 'invalid params, context window exceeds limit (2013)' },
  },
  {
    name: 'z.ai: model_context_window_exceeded',
    source: 'z.ai finish reason surfaced as an error (pi-mono overflow.ts)',
    report: { message: 'model_context_window_exceeded' },
  },
  {
    name: 'Alibaba DashScope (Qwen): range of input length',
    source: 'DashScope error codes',
    report: {
      status: 400,
      body: json({
        error: {
          code: '10012',
          message: 'InternalError.Algo.InvalidParameter: Range of input length should be [1, 202745]',
        },
      }),
    },
  },
  {
    name: 'Zhipu GLM: prompt exceeds max length',
    source: 'Zhipu BigModel error 1261',
    report: { status: 400, body: json({ error: { code: '1261', message: 'Prompt exceeds max length' } }) },
  },
  {
    name: 'GLM gateway: input tokens exceeded max_prompt_tokens',
    source: 'GLM OpenAI-compatible gateway (leookun/cursor-byok#129)',
    report: {
      status: 400,
      body: json({
        code: 20015,
        message: 'number of input tokens (204703) has exceeded max_prompt_tokens (202752) limit.',
        data: null,
      }),
    },
  },
  {
    name: 'Ollama: prompt too long',
    source: 'Ollama API (pi-mono overflow.ts)',
    report: { status: 400, message: 'prompt too long; exceeded max context length by 4021 tokens' },
  },
  {
    name: 'llama.cpp server: exceeds the available context size',
    source: 'llama.cpp server (pi-mono overflow.ts)',
    report: { status: 400, message: 'the request exceeds the available context size, try increasing it' },
  },
  {
    name: 'llama-cpp-python: requested tokens exceed context window',
    source: 'llama-cpp-python (nextcloud/context_chat_backend#27)',
    report: { message: 'Requested tokens (5136) exceed context window of 4096' },
  },
  {
    name: 'LM Studio: greater than the context length',
    source: 'LM Studio (pi-mono overflow.ts)',
    report: { message: 'tokens to keep from the initial prompt is greater than the context length' },
  },
  {
    name: 'LM Studio: context length of only',
    source: 'LM Studio (lmstudio-ai/lmstudio-bug-tracker#546)',
    report: {
      message:
        'Trying to keep the first 111490 tokens when context the overflows. However, the model is loaded with context length of only 32768 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input.',
    },
  },
  {
    name: 'Cerebras: 400 with no body',
    source: 'Cerebras via the OpenAI SDK (klaude-code, pi)',
    report: { status: 400, message: '400 status code (no body)' },
  },
  {
    name: 'Cerebras: 413 with no body',
    source: 'Cerebras via the OpenAI SDK (klaude-code, pi)',
    report: { message: '413 status code (no body)' },
  },
  {
    name: 'bare 400 with nothing else',
    source: 'klaude-code: 400 with no body',
    report: { status: 400 },
  },
  {
    name: 'nginx in front of a model server: 413 Request Entity Too Large',
    source: 'nginx default error page',
    report: {
      status: 413,
      body: '<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>',
    },
  },
  {
    name: 'OpenAI-compatible gateway: content_too_large',
    source: 'OpenAI-compatible proxy body-size limit',
    report: {
      status: 413,
      body: json({
        error: {
          message: 'request body exceeds the 32MB limit',
          type: 'invalid_request_error',
          code: 'content_too_large',
        },
      }),
    },
  },
  {
    name: 'OpenAI 429: one request above the tokens-per-minute limit (it can never pass unshrunk)',
    source: 'OpenAI API rate_limit_exceeded (type tokens)',
    report: {
      status: 429,
      message:
        'Request too large for gpt-5-nano in organization org-test on tokens per min (TPM): Limit 200000, Requested 480002. The input or output tokens must be reduced in order to run successfully.',
    },
  },
  {
    name: 'OpenAI: one request above the TPM limit, status lost',
    source: 'OpenAI API rate_limit_exceeded re-thrown without its status',
    report: {
      message: '429 Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 34307.',
    },
  },
  {
    name: "Groq 413: one request above the model's tokens-per-minute limit",
    source: 'Groq API rate_limit_exceeded (type tokens), a single oversized request',
    report: {
      status: 413,
      message:
        'Request too large for model `llama-3.1-8b-instant` in organization `org_test` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7000, please reduce your message size and try again.',
    },
  },
  {
    name: 'Anthropic: prompt is too long, with a pointer to the rate-limit docs',
    source: 'Anthropic-compatible proxy invalid_request_error',
    report: {
      status: 400,
      message:
        'prompt is too long: 215000 tokens > 200000 maximum. See the rate limits docs for higher limits.',
    },
  },
];

export { NOT_OVERFLOW_ERRORS } from './overflow-errors.not-overflow.fixtures';
