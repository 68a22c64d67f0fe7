import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { StubMessage, StubRequest } from './conversation';
import { stubMessage } from './conversation';
import type { CompletionOutput, FinishReason } from './openai-wire';

/**
 * The slice of Anthropic's Messages protocol the stub speaks: request parsing (what
 * `@anthropic-ai/sdk` sends), the `Message` object, and error bodies in Anthropic's shape and
 * wording so clients and core's overflow classifier read them as they read the real provider's.
 */

const textBlock = z.looseObject({ type: z.literal('text'), text: z.string() });

/** Blocks a tool result may carry: text is read, the rest (images, documents) only counted as present. */
const toolResultContent = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);

const KNOWN_BLOCKS = [
  'text',
  'image',
  'document',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
];

const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});

const toolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: toolResultContent.optional(),
  is_error: z.boolean().optional(),
});

const thinkingBlockSchema = z.looseObject({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string(),
});

const contentBlock = z.union([
  z.discriminatedUnion('type', [
    textBlock,
    z.looseObject({ type: z.literal('image'), source: z.looseObject({ type: z.string() }) }),
    z.looseObject({ type: z.literal('document'), source: z.looseObject({ type: z.string() }) }),
    toolUseBlock,
    toolResultBlock,
    thinkingBlockSchema,
    z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() }),
  ]),
  // Server tools' blocks and newer kinds pass through unread; a known kind must be well formed.
  z.looseObject({ type: z.string().refine((type) => !KNOWN_BLOCKS.includes(type)) }),
]);

type ContentBlock = z.infer<typeof contentBlock>;

// The schema lets an unknown kind through only under a name it does not know, so the kind names the shape.
const isToolUse = (block: ContentBlock): block is z.infer<typeof toolUseBlock> => block.type === 'tool_use';
const isThinking = (block: ContentBlock): block is z.infer<typeof thinkingBlockSchema> =>
  block.type === 'thinking';
const isToolResult = (block: ContentBlock): block is z.infer<typeof toolResultBlock> =>
  block.type === 'tool_result';

export const anthropicRequestSchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  messages: z
    .array(
      z.looseObject({
        role: z.enum(['user', 'assistant']),
        content: z.union([z.string(), z.array(contentBlock)]),
      }),
    )
    .min(1),
  tools: z.array(z.looseObject({ name: z.string().min(1) })).optional(),
  stream: z.boolean().optional(),
  thinking: z.looseObject({ type: z.string() }).optional(),
  stop_sequences: z.array(z.string()).optional(),
});

export type AnthropicRequest = z.infer<typeof anthropicRequestSchema>;

const textOf = (blocks: ReadonlyArray<{ type: string; text?: unknown }>): string =>
  blocks.map((block) => (block.type === 'text' && typeof block.text === 'string' ? block.text : '')).join('');

function messageOfBlocks(role: string, content: string | ContentBlock[]): StubMessage {
  if (typeof content === 'string') return stubMessage(role, content);
  const message = stubMessage(role, textOf(content));
  for (const block of content) {
    if (isToolUse(block)) {
      message.toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
    } else if (isToolResult(block)) {
      const output = block.content;
      message.toolResults.push({
        callId: block.tool_use_id,
        output: typeof output === 'string' ? output : textOf(output ?? []),
        isError: block.is_error === true,
      });
    }
  }
  return message;
}

/** The signature the stub gives its thinking; one a client altered or made up does not match. */
export function thinkingSignature(thinking: string): string {
  return createHash('sha256').update(`stub-signature:${thinking}`).digest('base64');
}

/**
 * Where a `thinking` block handed back is not the stub's own, word for word and signature
 * (Anthropic refuses those with this 400), or `null`.
 */
export function invalidThinking(request: AnthropicRequest): string | null {
  for (const [m, message] of request.messages.entries()) {
    if (typeof message.content === 'string') continue;
    for (const [b, block] of message.content.entries()) {
      if (!isThinking(block) || thinkingSignature(block.thinking) === block.signature) continue;
      return `messages.${m}.content.${b}: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  return null;
}

/** An Anthropic Messages request as the protocol-neutral request the stub answers. */
export function stubRequestOfAnthropic(request: AnthropicRequest): StubRequest {
  const system = request.system;
  const systemText = system === undefined ? '' : typeof system === 'string' ? system : textOf(system);
  return {
    protocol: 'anthropic',
    model: request.model,
    stream: request.stream === true,
    maxTokens: request.max_tokens,
    includeUsage: true,
    messages: [
      ...(systemText === '' ? [] : [stubMessage('system', systemText)]),
      ...request.messages.map((message) => messageOfBlocks(message.role, message.content)),
    ],
    toolNames: (request.tools ?? []).map((tool) => tool.name),
    thinkingEnabled: request.thinking !== undefined && request.thinking.type !== 'disabled',
  };
}

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'tool_use';

const STOP_REASONS: Record<FinishReason, AnthropicStopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
};

export type AnthropicBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string; citations: null }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

/**
 * The thinking a request with `thinking` enabled gets before its answer, signed so that a client
 * (or a gateway) that must hand it back verbatim can be checked to have done so.
 */
export function thinkingBlock(request: StubRequest): AnthropicBlock {
  const last = request.messages.at(-1);
  const thinking = `Considering the last ${last?.role ?? 'message'} (${request.messages.length} messages so far).`;
  const signature = thinkingSignature(thinking);
  return { type: 'thinking', thinking, signature };
}

/** The answer's content blocks: thinking when asked for, the text (when any), then the tool calls. */
export function contentBlocks(output: CompletionOutput, thinking: AnthropicBlock | null): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = thinking ? [thinking] : [];
  if (output.content !== null && (output.content !== '' || !output.toolCalls)) {
    blocks.push({ type: 'text', text: output.content, citations: null });
  }
  for (const call of output.toolCalls ?? []) {
    blocks.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: JSON.parse(call.function.arguments),
    });
  }
  return blocks;
}

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  service_tier: 'standard';
}

export function anthropicUsage(inputTokens: number, outputTokens: number): AnthropicUsage {
  return {
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    service_tier: 'standard',
  };
}

export function stopReason(finish: FinishReason): AnthropicStopReason {
  return STOP_REASONS[finish];
}

export function messageBody(
  id: string,
  model: string,
  content: AnthropicBlock[],
  finish: FinishReason,
  usage: AnthropicUsage,
): object {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(finish),
    stop_sequence: null,
    usage,
  };
}

/** Anthropic's error type for each status (`overloaded_error` is its 529, and a 503's here). */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

const MESSAGES: Record<string, string> = {
  authentication_error: 'invalid x-api-key',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'The requested resource could not be found.',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit.',
  overloaded_error: 'Overloaded',
  api_error: 'Internal server error',
};

export function anthropicErrorBody(status: number, message?: string): string {
  const type = anthropicErrorType(status);
  const text = message ?? MESSAGES[type] ?? `Request failed with status ${status} (injected by the stub).`;
  return JSON.stringify({ type: 'error', error: { type, message: text } });
}

/**
 * Anthropic's wording for a request over the window: the prompt alone ("prompt is too long"), or
 * the prompt with `max_tokens` ("input length and `max_tokens` exceed context limit").
 */
export function anthropicContextErrorBody(window: number, promptTokens: number, maxTokens: number): string {
  const message =
    promptTokens > window
      ? `prompt is too long: ${promptTokens} tokens > ${window} maximum`
      : `input length and \`max_tokens\` exceed context limit: ${promptTokens} + ${maxTokens} > ${window}, ` +
        'decrease input length or `max_tokens` and try again';
  return anthropicErrorBody(400, message);
}
