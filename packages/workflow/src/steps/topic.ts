import {
  buildTopicDetectionRequest,
  extractPreviousSummary,
  isPinnedMessage,
  ledgerOfMessages,
  NO_TOPIC_BOUNDARY,
  planTopicCompaction,
  topicDetectionOutputTokens,
  tokenMeasureFor,
  type Message,
  type TopicBoundary,
} from '@compactor/core';
import type { Attempt } from '../attempt';
import { heldRange } from '../compacted-range';
import { safeErrorMessage } from '@compactor/db';
import { rethrowForRetry } from '../errors';
import type { WorkflowResources } from '../resources';
import {
  checkWrittenSummary,
  fileOpsOf,
  summarizerSettings,
  writeSummary,
  type SummarySpend,
  type SummarizeOutcome,
} from './summary-writing';

/**
 * Topic mode (docs/PRESETS.md, `topic`): ask the detector where the current topic started, then keep from
 * there (truncate-only, when the topic started inside the verbatim window) or summarise what
 * comes before the verbatim window. A detector that fails or answers nonsense means "no
 * boundary" (the topic reference's safe default), never a lost compaction; a summary the detector cannot
 * give (or the policy wants from the summarizer) is written by the normal summarizer, which
 * merges the previous summary. The trigger was checked before the compaction was requested.
 */
export async function topicOutcome(
  resources: WorkflowResources,
  attempt: Attempt,
  view: Message[],
): Promise<SummarizeOutcome> {
  const { policy } = attempt;
  const messages = view.filter((m) => !isPinnedMessage(m) || !policy.pinSystemMessages);
  const settings = summarizerSettings(resources, attempt);
  // The request and the plan cut by the same rules, so the detector summarises exactly what is dropped.
  const measure = tokenMeasureFor(policy.tokenCount).message;
  const request = buildTopicDetectionRequest(messages, {
    cutAt: policy.cutAt,
    minVerbatimExchanges: policy.topic.minVerbatimExchanges,
    measure,
    maxMessages: policy.topic.maxMessages,
    maxCharsPerMessage: policy.topic.maxCharsPerMessage,
    summaryBudgetTokens: settings.maxOutputTokens,
    verbatimWindowTokens: policy.topic.verbatimWindowTokens,
    summaryFrom: policy.topic.summaryFrom,
  });
  const detected = await detect(resources, attempt, request, settings);
  const plan = planTopicCompaction({
    messages,
    boundary: detected.boundary,
    window: request.window,
    triggerTokens: 0,
    verbatimWindowTokens: policy.topic.verbatimWindowTokens,
    minConfidence: policy.topic.minConfidence,
    minVerbatimExchanges: policy.topic.minVerbatimExchanges,
    summaryFrom: policy.topic.summaryFrom,
    cutAt: policy.cutAt,
    measure,
  });
  if (plan.case === 'none') return { kind: 'nothing-to-compact', reason: `topic: ${plan.reason}` };

  const dropped = messages.slice(0, plan.keepFrom);
  const fileOps = fileOpsOf(dropped, policy.fileTools);
  const base = {
    kind: 'summary' as const,
    boundarySeq: plan.boundarySeq,
    messagesCompacted: plan.summaryCovers,
    fileOps,
    ledger: ledgerOfMessages(
      dropped.filter((m) => !m.summary),
      policy.fileTools ? { fileTools: policy.fileTools } : {},
    ),
    clamps: [],
    detail: {
      topicCase: plan.case,
      boundaryIndex: plan.boundaryIndex,
      confidence: detected.boundary.confidence,
      movedToTurnStart: plan.movedToTurnStart,
    },
  };
  if (!plan.needsSummarizer) {
    // 'summarizer' only ever comes with needsSummarizer.
    const writtenBy =
      plan.summarySource === 'detector' || plan.summarySource === 'previous-summary'
        ? plan.summarySource
        : 'none';
    const checked =
      plan.summaryText === null
        ? { summaryText: null, detail: {} }
        : checkWrittenSummary(attempt, dropped, messages.slice(plan.keepFrom), plan.summaryText, fileOps);
    const detail = { ...base.detail, ...checked.detail, calls: detectionCalls(detected) };
    return { ...base, ...checked, detail, writtenBy, llm: detected.llm, fallback: null };
  }
  const kept = messages.slice(plan.keepFrom);
  const range = heldRange(dropped, [], policy.fileTools);
  const written = await writeSummary(resources, attempt, range, fileOps, kept, () =>
    resources.llm.summarizeMessages({
      messages: dropped,
      previousSummary: extractPreviousSummary(dropped),
      instructions: attempt.compaction.instructions ?? policy.instructions,
      fileOps,
      settings,
      signal: attempt.signal,
    }),
  );
  return {
    ...base,
    ...written,
    llm: addSpend(detected.llm, written.llm),
    detail: {
      ...base.detail,
      ...written.detail,
      calls: detectionCalls(detected) + (typeof written.detail.calls === 'number' ? written.detail.calls : 0),
    },
  };
}

/** The LLM requests detection paid for (its one request, unless it failed): analytics' `llm_calls`. */
function detectionCalls(detected: { llm: SummarySpend | null }): number {
  return detected.llm ? 1 : 0;
}

async function detect(
  resources: WorkflowResources,
  attempt: Attempt,
  request: { system: string; user: string },
  settings: ReturnType<typeof summarizerSettings>,
): Promise<{ boundary: TopicBoundary; llm: SummarySpend | null }> {
  try {
    const result = await resources.llm.detectTopicBoundary({
      prompt: { system: request.system, user: request.user },
      model: resources.topicModel ?? settings.model,
      // The summary budget is the summary's; the JSON around it needs room of its own.
      maxOutputTokens: topicDetectionOutputTokens(settings.maxOutputTokens, attempt.model.maxOutputTokens),
      timeoutMs: settings.timeoutMs,
      signal: attempt.signal,
      contextWindow: settings.contextWindow,
    });
    return {
      boundary: result.boundary,
      llm: {
        model: result.model,
        usage: { input: result.usage.promptTokens, output: result.usage.completionTokens },
        costUsd: result.costUsd,
      },
    };
  } catch (error) {
    rethrowForRetry(error, attempt);
    resources.log.warn(
      { compactionId: attempt.compaction.id, err: safeErrorMessage(error) },
      'topic detection failed; continuing with no boundary',
    );
    return { boundary: NO_TOPIC_BOUNDARY, llm: null };
  }
}

function addSpend(a: SummarySpend | null, b: SummarySpend | null): SummarySpend | null {
  if (!a || !b) return a ?? b;
  return {
    model: b.model,
    usage: { input: a.usage.input + b.usage.input, output: a.usage.output + b.usage.output },
    costUsd: a.costUsd === null || b.costUsd === null ? null : a.costUsd + b.costUsd,
  };
}
