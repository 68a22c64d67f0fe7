/**
 * The served context made to fit when the view is over the usable input (./context.ts): the
 * prepared draft's view when one applies, else core's read-time fit, counted exactly.
 */
import {
  fitViewForRead,
  summaryBudgetTokens,
  tokenMeasureFor,
  type AssembledContext,
  type FitCounters,
  type Message,
} from '@compactor/core';
import { canonicalJson, type SessionRow } from '@compactor/db';
import type { ContextFitKind } from '@compactor/contract';
import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import { preparedView } from './context-prepared';
import type { SessionResources } from './resources';
import type { StatusSnapshot } from './status';

export interface Served {
  messages: Message[];
  tokens: number;
  fit: ContextFitKind;
}

/**
 * The view fitted to the usable input less the overhead the provider adds on top of the stored
 * counts (the usage calibration: `status.tokens` less the stored count of the view as served,
 * past the media budget, never below 0): the prepared
 * draft's view when one applies and fits (fitted further if it must), else the read-time fit.
 */
export async function fitToUsable(
  resources: Pick<SessionResources, 'db' | 'tokenizerFor'>,
  session: SessionRow,
  { snapshot, context }: { snapshot: StatusSnapshot; context: AssembledContext },
  reserve = 0,
): Promise<Served> {
  const { status, stats, policy, model } = snapshot;
  const overhead = Math.max(0, status.tokens - (stats.storedTokens - snapshot.mediaSavedTokens)) + reserve;
  const count = fitCounters(resources, session.modelId);
  const options = {
    budgetTokens: Math.max(0, (status.usable ?? 0) - overhead),
    pruning: policy.prune ? policy.pruning : null,
    measure: tokenMeasureFor(policy.tokenCount),
    pinSystemMessages: policy.pinSystemMessages,
    markerBudgetTokens: summaryBudgetTokens(model, policy),
    // The view's own time, not the clock's: the same view reads the same, byte for byte.
    at: context.messages.at(-1)?.createdAt ?? new Date(0).toISOString(),
    count,
  };
  if (policy.prepare !== null) {
    const prepared = await preparedView(
      resources.db,
      session,
      policy,
      context.messages,
      { latestCompletedId: context.compactionId, activeCompactionId: snapshot.active?.id ?? null },
      count.text,
    );
    if (prepared) {
      const fitted = fitViewForRead(prepared.messages, options);
      if (fitted.fits) return { messages: fitted.messages, tokens: fitted.tokens, fit: 'prepared' };
    }
  }
  const fitted = fitViewForRead(context.messages, options);
  return { messages: fitted.messages, tokens: fitted.tokens, fit: fitted.fits ? 'interim' : 'over' };
}

/**
 * Exact counters for the session's model, as the store counts parts (a tool input as canonical
 * JSON). The resources' counter when it counts synchronously (the API's tokenizers do), else the
 * model's encoding.
 */
export function fitCounters(resources: Pick<SessionResources, 'tokenizerFor'>, modelId: string): FitCounters {
  const counter = resources.tokenizerFor(modelId) as { countSync?: unknown };
  const tokenizer =
    typeof counter.countSync === 'function'
      ? (counter as { countSync(text: string): number })
      : getTokenizer(encodingForModel(modelId));
  const text = (value: string) => tokenizer.countSync(value);
  return { text, input: (input) => text(canonicalJson(input)) };
}
