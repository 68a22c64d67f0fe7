// @compactor/client: the Compactor HTTP API over global fetch, typed by @compactor/contract.
export {
  CompactorClient,
  type CallOptions,
  type ContextFitOptions,
  type CompactionRequestOptions,
  type CompactorClientOptions,
} from './client.js';
export { CompactorApiError, CompactorResponseError } from './errors.js';
export { newMessageId, withMessageIds } from './message-ids.js';
export {
  INVALID_RECALL_ARGUMENTS,
  mediaNotFoundText,
  recallAnswerText,
  recallQueryOf,
  type RecallRequest,
  type ToolCallLike,
} from './recall-tool.js';
export type { EventsOptions } from './events.js';
export {
  parseRetryAfter,
  retryDelayMs,
  retryPolicy,
  RETRYABLE_STATUSES,
  type RetryOptions,
  type RetryPolicy,
} from './retry.js';
export { readSse, type SseBlock } from './sse.js';
export { clearedOutputMarker, RECALL_TOOL, RECALL_TOOL_NAME } from '@compactor/contract';
export type * from '@compactor/contract';
export {
  usageFromAnthropic,
  usageFromOpenAI,
  type AnthropicUsageLike,
  type CompactorUsage,
  type OpenAIUsageLike,
} from './usage.js';
