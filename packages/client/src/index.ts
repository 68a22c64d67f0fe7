// @compactor/client: the Compactor HTTP API over global fetch, typed by @compactor/contract.
export {
  CompactorClient,
  type CallOptions,
  type CompactionRequestOptions,
  type CompactorClientOptions,
} from './client';
export { CompactorApiError, CompactorResponseError } from './errors';
export type { EventsOptions } from './events';
export {
  parseRetryAfter,
  retryDelayMs,
  retryPolicy,
  RETRYABLE_STATUSES,
  type RetryOptions,
  type RetryPolicy,
} from './retry';
export { readSse, type SseBlock } from './sse';
export type * from '@compactor/contract';
