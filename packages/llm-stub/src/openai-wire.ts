import { z } from 'zod';
import type { StubMessage, StubRequest } from './conversation';
import { stubMessage } from './conversation';

/**
 * The slice of the OpenAI Chat Completions protocol the stub speaks: request parsing, response
 * and chunk objects, error bodies shaped like the real provider's so clients classify them the
 * same way.
 */

const contentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });

export const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z
    .array(
      z.looseObject({
        role: z.string(),
        content: z.union([z.string(), z.array(contentPartSchema), z.null()]).optional(),
        tool_calls: z
          .array(
            z.looseObject({
              id: z.string(),
              function: z.looseObject({ name: z.string(), arguments: z.string() }),
            }),
          )
          .nullable()
          .optional(),
        tool_call_id: z.string().optional(),
      }),
    )
    .min(1),
  tools: z
    .array(
      z.looseObject({
        function: z.looseObject({ name: z.string() }).optional(),
        custom: z.looseObject({ name: z.string() }).optional(),
      }),
    )
    .nullable()
    .optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  response_format: z.looseObject({ type: z.string() }).nullable().optional(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

export interface ChatMessageText {
  role: string;
  text: string;
}

/** Flattens content parts to text, as a text-only model would see them. */
export function messageTexts(request: ChatRequest): ChatMessageText[] {
  return request.messages.map((message) => {
    const content = message.content;
    const text =
      typeof content === 'string'
        ? content
        : Array.isArray(content)
          ? content.map((part) => part.text ?? '').join('')
          : '';
    return { role: message.role, text };
  });
}

/** A Chat Completions request as the protocol-neutral request the stub answers. */
export function stubRequestOfChat(chat: ChatRequest): StubRequest {
  const texts = messageTexts(chat);
  const messages = chat.messages.map((message, at): StubMessage => {
    const text = texts[at]?.text ?? '';
    const toolCalls = (message.tool_calls ?? []).map((call) => ({
      id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
    }));
    const toolResults =
      message.role === 'tool' && message.tool_call_id !== undefined
        ? [{ callId: message.tool_call_id, output: text, isError: false }]
        : [];
    return stubMessage(message.role, text, { toolCalls, toolResults });
  });
  return {
    protocol: 'openai',
    model: chat.model,
    stream: chat.stream === true,
    maxTokens: chat.max_completion_tokens ?? chat.max_tokens ?? null,
    includeUsage: chat.stream_options?.include_usage === true,
    messages,
    toolNames: (chat.tools ?? []).flatMap((tool) => tool.function?.name ?? tool.custom?.name ?? []),
    thinkingEnabled: false,
  };
}

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export function wireUsage(promptTokens: number, completionTokens: number): WireUsage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

export type FinishReason = 'stop' | 'length' | 'tool_calls';

export interface StubToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface CompletionOutput {
  content: string | null;
  toolCalls: StubToolCall[] | null;
  finishReason: FinishReason;
}

export function completionBody(
  id: string,
  model: string,
  output: CompletionOutput,
  usage: WireUsage,
): object {
  return {
    id,
    object: 'chat.completion',
    created: 0,
    model,
    system_fingerprint: 'compactor-llm-stub',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: output.content,
          refusal: null,
          ...(output.toolCalls ? { tool_calls: output.toolCalls } : {}),
        },
        logprobs: null,
        finish_reason: output.finishReason,
      },
    ],
    usage,
  };
}

/**
 * The SSE events of a streamed completion: a role chunk, the content in pieces, the finish chunk,
 * the usage chunk when asked for (`stream_options.include_usage`), then `[DONE]`.
 */
export function streamEvents(
  id: string,
  model: string,
  output: CompletionOutput,
  usage: WireUsage,
  options: { includeUsage: boolean; pieceChars: number },
): string[] {
  const chunk = (delta: object, finishReason: FinishReason | null, extra: object = {}): string =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: 0,
      model,
      system_fingerprint: 'compactor-llm-stub',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...extra,
    })}\n\n`;

  const events = [chunk({ role: 'assistant', content: '' }, null)];
  const content = output.content ?? '';
  for (let at = 0; at < content.length; at += options.pieceChars) {
    events.push(chunk({ content: content.slice(at, at + options.pieceChars) }, null));
  }
  if (output.toolCalls) {
    events.push(chunk({ tool_calls: output.toolCalls.map((call, index) => ({ index, ...call })) }, null));
  }
  events.push(chunk({}, output.finishReason));
  if (options.includeUsage) {
    events.push(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model, choices: [], usage })}\n\n`,
    );
  }
  events.push('data: [DONE]\n\n');
  return events;
}

interface ErrorShape {
  message: string;
  type: string;
  code: string | null;
  param?: string | null;
}

/** Error bodies in the wording real providers use for each status. */
export function errorShapeForStatus(status: number): ErrorShape {
  switch (status) {
    case 400:
      return {
        message: 'Invalid request (injected by the stub).',
        type: 'invalid_request_error',
        code: null,
      };
    case 401:
      return {
        message: 'Incorrect API key provided.',
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      };
    case 403:
      return { message: 'You are not allowed to use this model.', type: 'invalid_request_error', code: null };
    case 404:
      return { message: 'The model does not exist.', type: 'invalid_request_error', code: 'model_not_found' };
    case 429:
      return {
        message: 'Rate limit reached for requests per minute. Please try again later.',
        type: 'requests',
        code: 'rate_limit_exceeded',
      };
    case 503:
      return {
        message: 'The engine is currently overloaded, please try again later.',
        type: 'server_error',
        code: null,
      };
    default:
      return status >= 500
        ? {
            message: 'The server had an error while processing your request.',
            type: 'server_error',
            code: null,
          }
        : {
            message: `Request failed with status ${status} (injected by the stub).`,
            type: 'invalid_request_error',
            code: null,
          };
  }
}

export function errorBody(shape: ErrorShape): string {
  return JSON.stringify({ error: { param: null, ...shape } });
}

/** OpenAI's wording for a prompt that does not fit, which every overflow classifier recognises. */
export function contextLengthErrorShape(
  window: number,
  promptTokens: number,
  outputTokens: number,
): ErrorShape {
  return {
    message:
      `This model's maximum context length is ${window} tokens. However, you requested ` +
      `${promptTokens + outputTokens} tokens (${promptTokens} in the messages, ${outputTokens} in the completion). ` +
      'Please reduce the length of the messages or completion.',
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  };
}
