// Public surface of @compactor/llm: the OpenAI-compatible client Compactor's workers summarise with.
export { createLlm, tokenizerCounter } from './llm';
export type { Llm, LlmConfig } from './llm';
export { createChatCompleter } from './client';
export { createHttpFetch } from './http-fetch';
export type { ChatCompleter, CompletionRequest, CompletionResult, LlmClientConfig } from './client';
export { summarizePrompt, assertPromptFits, countPromptTokens } from './summarize';
export type { SummarizeDeps, SummarizeRequest, SummaryResult } from './summarize';
export {
  FOLD_TARGET_SHARE,
  MAX_CUT_OFFS_IN_A_ROW,
  MIN_FOLD_TARGET_TOKENS,
  summarizeMessages,
} from './chunked-summary';
export type { SummarizeMessagesInput, SummarizerSettings } from './chunked-summary';
export { arraySource, concatSources, pacer, YIELD_EVERY_MS } from './message-source';
export type { MessageSource } from './message-source';
export { summarizeSplitTurn } from './dual-summary';
export type { SplitTurnInput, SplitTurnSummaryResult } from './dual-summary';
export { detectTopicBoundary } from './topic-boundary';
export type { DetectTopicBoundaryRequest, TopicBoundaryResult } from './topic-boundary';
export { MAX_OUTPUT_WINDOW_SHARE, resolveSummarizerSettings } from './settings';
export type { ResolveSummarizerInput } from './settings';
export {
  boundFileOps,
  planSummaryChunks,
  promptTokenBudget,
  CHAT_FRAMING_TOKENS,
  MIN_CHUNK_TOKENS,
} from './chunking';
export type { ChunkPlanInput, PlannedChunk, RequestBudgetInput } from './chunking';
export { shrinkMessage, cutMiddle } from './shrink-message';
export { classifyLlmError, retryAfterMs } from './classify';
export type { ClassifyContext } from './classify';
export {
  addSpend,
  InvalidSummaryError,
  isLlmError,
  LlmAbortedError,
  LlmError,
  LlmFatalError,
  LlmOverflowError,
  LlmRetryableError,
  NO_SPEND,
  spentOf,
  withSpent,
} from './errors';
export type { LlmErrorKind, LlmSpend, RetryableReason } from './errors';
export { DEFAULT_PRICES, estimateCostUsd, findModelPrice } from './pricing';
export type { ModelPrice, PriceTable } from './pricing';
export { addCost, addUsage, toMessageUsage, usageFromWire, ZERO_USAGE } from './usage';
export type { LlmUsage } from './usage';
export type { CountTokensAsync } from './count-tokens';
export { llmConfigFromEnv, llmEnvSchema } from './config';
export type { LlmDeploymentDefaults, LlmEnv } from './config';
