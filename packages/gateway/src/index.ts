// Public surface of @compactor/gateway: the drop-in endpoints' pipeline, for the API's routes to call.
export * from './conversation';
export { chatCompletions, type DropInDeps, type DropInRequest } from './openai-pipeline';
export type { DropInResponder } from './dropin-request';
export { answersStored } from './pending-answers';
export { OpenAIUpstream, openAIError } from './openai-upstream';
export { DropInError, UpstreamFailure, type DropInErrorCode } from './errors';
export {
  DEFAULT_COMPACTION_WAIT_MS,
  DEFAULT_UPSTREAM_IDLE_MS,
  DEFAULT_UPSTREAM_MAX_RETRIES,
  DEFAULT_UPSTREAM_TIMEOUT_MS,
  type DropInSettings,
  type TenantUpstreams,
  type UpstreamEndpoint,
} from './upstream-config';
export { anthropicMessages, type AnthropicDropInDeps } from './anthropic-pipeline';
export {
  AnthropicUpstream,
  anthropicError,
  typeForStatus as anthropicErrorTypeFor,
  type AnthropicErrorType,
} from './anthropic-upstream';
