import OpenAI from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions';
import { classifyLlmError } from './classify';
import { LlmRetryableError } from './errors';
import type { PriceTable } from './pricing';
import { DEFAULT_PRICES, estimateCostUsd } from './pricing';
import type { LlmUsage } from './usage';
import { usageFromWire } from './usage';
import { createHttpFetch } from './http-fetch';

/** How to reach an OpenAI-compatible endpoint; apps build it from their env with `llmConfigFromEnv`. */
export interface LlmClientConfig {
  apiKey: string;
  /** Any OpenAI-compatible endpoint (vLLM, Ollama, LiteLLM, the stub); the SDK default is OpenAI. */
  baseURL?: string | null;
  /** Per-request timeout when a call does not give its own. */
  timeoutMs: number;
  /** Sent with every request (proxy routing, tenant tags, the stub's `x-stub-*` fault headers). */
  defaultHeaders?: Record<string, string>;
  /** Stream answers (keeps idle-timeout proxies from cutting long summaries). Default false. */
  stream?: boolean;
  /**
   * OpenAI's reasoning models accept only `max_completion_tokens`; some older OpenAI-compatible
   * servers know only `max_tokens`. Default `max_completion_tokens`.
   */
  maxTokensParameter?: 'max_completion_tokens' | 'max_tokens';
  /** Omitted unless set: reasoning models reject any temperature but the default. */
  temperature?: number | null;
  prices?: PriceTable;
}

/** One call: a system and a user message; `timeoutMs` (default: the client's) covers the whole exchange. */
export interface CompletionRequest {
  model: string;
  system: string;
  user: string;
  maxOutputTokens: number;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
}

/** A completion's text, usage and estimated cost; `finishReason` `length` means the text was cut off. */
export interface CompletionResult {
  text: string;
  /** Tool calls the model tried to make. Summarizer calls send no tools, so any is an error. */
  toolCallCount: number;
  finishReason: string | null;
  /** The model that answered, as the provider names it. */
  model: string;
  usage: LlmUsage;
  /** Estimated USD cost, `null` when the price table does not know the model. */
  costUsd: number | null;
}

/** One chat completion with classified errors. The thing `summarize` and `detectTopicBoundary` build on. */
export interface ChatCompleter {
  complete(request: CompletionRequest): Promise<CompletionResult>;
}

/**
 * A Chat Completions client on the official SDK with its retries off: the job queue owns
 * retries, and a hidden SDK retry would double-count attempts and ignore cancellation windows.
 */
export function createChatCompleter(config: LlmClientConfig): ChatCompleter {
  const client = new OpenAI({
    apiKey: config.apiKey,
    ...(config.baseURL ? { baseURL: config.baseURL } : {}),
    timeout: config.timeoutMs,
    maxRetries: 0,
    fetch: createHttpFetch(),
    ...(config.defaultHeaders ? { defaultHeaders: config.defaultHeaders } : {}),
  });
  const prices = config.prices ?? DEFAULT_PRICES;
  const maxTokensParameter = config.maxTokensParameter ?? 'max_completion_tokens';

  async function complete(request: CompletionRequest): Promise<CompletionResult> {
    // The deployment's timeout (LLM_TIMEOUT_MS) is a ceiling: a session policy may ask for less,
    // never for more (the policy's default would otherwise always win over the environment).
    const timeoutMs = Math.min(request.timeoutMs ?? config.timeoutMs, config.timeoutMs);
    const controller = new AbortController();
    let timedOut = false;
    // Our own timer covers the whole exchange, body and stream included; the SDK's covers only
    // the wait for response headers.
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`LLM request timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    const onCallerAbort = (): void => controller.abort(request.signal?.reason);
    request.signal?.addEventListener('abort', onCallerAbort, { once: true });
    if (request.signal?.aborted) controller.abort(request.signal.reason);

    const body = {
      model: request.model,
      messages: [
        { role: 'system' as const, content: request.system },
        { role: 'user' as const, content: request.user },
      ],
      [maxTokensParameter]: request.maxOutputTokens,
      ...(config.temperature != null ? { temperature: config.temperature } : {}),
    };
    try {
      const answer = config.stream
        ? await completeStreaming(client, body, controller.signal, timeoutMs)
        : await completeOnce(client, body, controller.signal, timeoutMs);
      return { ...answer, costUsd: estimateCostUsd(request.model, answer.usage, prices) };
    } catch (error) {
      throw classifyLlmError(error, {
        aborted: request.signal?.aborted === true,
        timedOutAfterMs: timedOut ? timeoutMs : null,
      });
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  return { complete };
}

type Answer = Omit<CompletionResult, 'costUsd'>;
type RequestBody = Omit<ChatCompletionCreateParamsNonStreaming, 'stream'>;

async function completeOnce(
  client: OpenAI,
  body: RequestBody,
  signal: AbortSignal,
  timeout: number,
): Promise<Answer> {
  const params: ChatCompletionCreateParamsNonStreaming = { ...body, stream: false };
  const completion = await client.chat.completions.create(params, { signal, timeout });
  // Proxies sometimes answer 200 with an empty or odd body instead of an error.
  if (!completion || !Array.isArray(completion.choices)) {
    throw new SyntaxError('the completion has no choices array');
  }
  const choice = completion.choices[0];
  return {
    text: choice?.message?.content ?? '',
    toolCallCount: choice?.message?.tool_calls?.length ?? 0,
    finishReason: choice?.finish_reason ?? null,
    model: completion.model ?? body.model,
    usage: usageFromWire(completion.usage),
  };
}

async function completeStreaming(
  client: OpenAI,
  body: RequestBody,
  signal: AbortSignal,
  timeout: number,
): Promise<Answer> {
  const params: ChatCompletionCreateParamsStreaming = {
    ...body,
    stream: true,
    stream_options: { include_usage: true },
  };
  const stream = await client.chat.completions.create(params, { signal, timeout });
  let text = '';
  const toolCallIndexes = new Set<number>();
  let finishReason: string | null = null;
  let model = body.model;
  let usage = usageFromWire(null);
  for await (const chunk of stream) {
    model = chunk.model || model;
    if (chunk.usage) usage = usageFromWire(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      text += choice.delta?.content ?? '';
      for (const call of choice.delta?.tool_calls ?? []) toolCallIndexes.add(call.index);
      finishReason = choice.finish_reason ?? finishReason;
    }
  }
  if (finishReason === null) {
    // The SSE stream ended without a finish chunk: the connection was cut or a proxy gave up.
    throw new LlmRetryableError('the stream ended before the answer finished', 'connection');
  }
  return { text, toolCallCount: toolCallIndexes.size, finishReason, model, usage };
}
