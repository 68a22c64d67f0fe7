import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import type { SummarizeMessagesInput } from './chunked-summary';
import { summarizeMessages } from './chunked-summary';
import type { ChatCompleter, CompletionRequest, CompletionResult, LlmClientConfig } from './client';
import { createChatCompleter } from './client';
import type { CountTokensAsync } from './count-tokens';
import type { SplitTurnInput, SplitTurnSummaryResult } from './dual-summary';
import { summarizeSplitTurn } from './dual-summary';
import type { SummarizeDeps, SummarizeRequest, SummaryResult } from './summarize';
import { summarizePrompt } from './summarize';
import type { DetectTopicBoundaryRequest, TopicBoundaryResult } from './topic-boundary';
import { detectTopicBoundary } from './topic-boundary';

/** Client settings plus what summarising needs: a token counter and the invalid-output retry count. */
export interface LlmConfig extends LlmClientConfig {
  /**
   * Token counter for fitting prompts into windows. Default: the exact tokenizer of the
   * summarizer model's encoding (`@compactor/tokenizer`).
   */
  countTokens?: CountTokensAsync;
  /** Extra attempts after an invalid summary before `InvalidSummaryError`. Default 1. */
  invalidOutputRetries?: number;
}

/** What the worker's resources object carries as `llm`. */
export interface Llm {
  /** One raw completion with classified errors. */
  complete(request: CompletionRequest): Promise<CompletionResult>;
  /** One summary from one prompt built by core (`buildSummaryPrompt`). */
  summarize(request: SummarizeRequest): Promise<SummaryResult>;
  /** A summary of messages of any size: shrinks, chunks and folds to fit the summarizer's window. */
  summarizeMessages(input: SummarizeMessagesInput): Promise<SummaryResult>;
  /** History and turn-prefix summaries, concurrently, joined. */
  summarizeSplitTurn(input: SplitTurnInput): Promise<SplitTurnSummaryResult>;
  /** The topic-boundary answer to a prompt built by core (`buildTopicDetectionRequest`). */
  detectTopicBoundary(request: DetectTopicBoundaryRequest): Promise<TopicBoundaryResult>;
}

/** Exact counts with the model's encoding; unknown models count as o200k_base. */
export function tokenizerCounter(model: string): CountTokensAsync {
  const tokenizer = getTokenizer(encodingForModel(model));
  return (text, options) => tokenizer.count(text, options?.signal ? { signal: options.signal } : {});
}

/** The {@link Llm} the worker uses; pass a `completer` to replace the HTTP client (e.g. in tests). */
export function createLlm(config: LlmConfig, completer: ChatCompleter = createChatCompleter(config)): Llm {
  const deps = (model: string): SummarizeDeps => ({
    completer,
    countTokens: config.countTokens ?? tokenizerCounter(model),
    ...(config.invalidOutputRetries !== undefined
      ? { invalidOutputRetries: config.invalidOutputRetries }
      : {}),
  });
  return {
    complete: (request) => completer.complete(request),
    summarize: (request) => summarizePrompt(deps(request.model), request),
    summarizeMessages: (input) => summarizeMessages(deps(input.settings.model), input),
    summarizeSplitTurn: (input) => summarizeSplitTurn(deps(input.settings.model), input),
    detectTopicBoundary: (request) => detectTopicBoundary(deps(request.model), request),
  };
}
