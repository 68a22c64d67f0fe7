/**
 * Replays one transcript under one variant, as a live agent would: create a session, follow its
 * events, append the transcript one message at a time (each assistant message is one model call);
 * when an append triggers a compaction, the next model call waits for it to end, and what it left
 * is checked right away. Messages that are not model output (a user's next request) are appended
 * while it runs, as a client records them.
 */
import { CompactorApiError, type CompactorClient } from '@compactor/client';
import type { FileToolNames } from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import { followEvents, type FollowedEvents } from '@compactor/stack';
import type { RunReport, TurnPoint, UsageMode, Variant, CompactionRecord } from '../report/model';
import type { Transcript } from '../transcript';
import { measureOverhead, usageToSend, withCacheSplit } from '../usage';
import { recordCompaction, type SessionState } from './compaction-record';
import { TranscriptFacts } from '../probes/retention';
import { CompactionWatch, TERMINAL_STATUSES } from './compaction-watch';
import { callCache, simulatePromptCache, type CallCache, type ModelCall } from '../cache-cost';
import type { CacheModel } from '@compactor/core';
import { readModelCall } from './prompt-recorder';
import { triggerWaits, type TriggerCrossing } from './trigger-waits';

export interface RunTarget {
  client: CompactorClient;
  /** The session model when no summarizer model is given (the stub's, or the provider's). */
  defaultModel: string;
  /**
   * Whether the summarizer answers to any model name (the stub): with an agent model
   * (`RunSettings.agentModel`) it then runs as that model, priced as it; otherwise it keeps
   * `defaultModel`.
   */
  anyModel?: boolean;
}

export interface RunSettings {
  window: number;
  usage: UsageMode;
  /** How long one compaction may take before the run gives up on it. */
  timeoutMs: number;
  /** How long to wait for the prune job a finished turn enqueued. */
  pruneWaitMs: number;
  /** The replayed agent's model and its prompt cache: the session's model, and its prompts are priced. */
  agentModel?: { id: string; cache: CacheModel } | null;
  /** How long each of the agent's model calls takes before its answer is appended. */
  callLatencyMs?: number;
}

export interface RunProgress {
  appended: number;
  total: number;
  tokens: number;
  usable: number;
  compactions: number;
  state: 'appending' | 'waiting' | 'done' | 'failed';
}

/** The output reserve of the replayed model: an eighth of the window, at most 16k (32k → 4k). */
export function maxOutputFor(window: number): number {
  return Math.max(256, Math.min(16_384, Math.round(window / 8)));
}

function sessionBody(
  id: string,
  transcript: Transcript,
  variant: Variant,
  target: RunTarget,
  settings: RunSettings,
) {
  const { window } = settings;
  const agentModel = settings.agentModel?.id ?? null;
  const summarizerModel =
    variant.summarizerModel ?? (agentModel !== null && !target.anyModel ? target.defaultModel : null);
  const policy = summarizerModel
    ? {
        ...variant.policy,
        summarizer: { ...(variant.policy.summarizer as object | undefined), model: summarizerModel },
      }
    : variant.policy;
  return {
    id,
    model: {
      id: agentModel ?? variant.summarizerModel ?? target.defaultModel,
      provider: 'openai',
      contextWindow: window,
      maxOutputTokens: maxOutputFor(window),
    },
    policy,
    metadata: { replay: { transcript: transcript.key, format: transcript.format, variant: variant.label } },
  };
}

const finishesTurn = (m: MessageInput) => m.role === 'assistant' && !!m.finish && m.finish !== 'tool-calls';

export async function replayRun(
  target: RunTarget,
  settings: RunSettings,
  transcript: Transcript,
  variant: Variant,
  sessionId: string,
  onProgress: (progress: RunProgress) => void = () => undefined,
): Promise<RunReport> {
  const started = Date.now();
  const { client } = target;
  const points: TurnPoint[] = [];
  const compactions: CompactionRecord[] = [];
  const seqs: number[] = [];
  const watch = new CompactionWatch();
  let usable = 0;
  let waitMs = 0;
  const timing = { appendMs: 0, pruneWaitMs: 0, checkMs: 0, promptMs: 0, callMs: 0 };
  const calls: ModelCall[] = [];
  const crossings: TriggerCrossing[] = [];
  let prunesSkipped = 0;
  let events: FollowedEvents | null = null;
  const report = (status: RunReport['status'], error: string | null): RunReport => ({
    transcript: transcript.key,
    file: transcript.file,
    format: transcript.format,
    messages: transcript.messages.length,
    variant,
    sessionId,
    window: settings.window,
    usable,
    status,
    error,
    durationMs: Date.now() - started,
    waitMs,
    timing,
    points,
    compactions,
    prunes: { ...watch.prunes },
    prunesSkipped,
    promptCache: settings.agentModel
      ? { model: settings.agentModel.id, ...simulatePromptCache(calls, settings.agentModel.cache) }
      : null,
    triggerWaits: triggerWaits(crossings, compactions, (id) => watch.endedAt(id)),
  });

  try {
    const created = await client.createSession(sessionBody(sessionId, transcript, variant, target, settings));
    // The replay's sessions have a finite window: the API computes what of it is usable.
    usable = created.status.usable!;
    const effective = created.effectivePolicy;
    const fileTools = effective.fileTools as FileToolNames | undefined;
    const state: SessionState = {
      sessionId,
      transcript: transcript.messages,
      seqs,
      fileTools,
      facts: new TranscriptFacts(transcript.messages, fileTools),
    };
    events = await followEvents(client, sessionId, watch.onEvent);

    let servedTokens = created.status.tokens;
    let estimate = created.status.estimate;
    let overhead: number | null = null;
    let contextReduced = false;
    let active: { id: string; triggeredAtTurn: number } | null = null;
    // A compaction an append started after the active one ended (one session has one active
    // compaction at a time): waited for and recorded once the active one is.
    let next: { id: string; triggeredAtTurn: number } | null = null;
    const progress = (appended: number, s: RunProgress['state']) =>
      onProgress({
        appended,
        total: transcript.messages.length,
        tokens: servedTokens,
        usable,
        compactions: compactions.length,
        state: s,
      });

    /** Waits for the active compaction (if `block`, or if it already ended) and records it. */
    const settle = async (turn: number, block: boolean) => {
      if (!active) return;
      const { id, triggeredAtTurn } = active;
      if (!block && !watch.endedWith(id)) return;
      const waitStarted = Date.now();
      progress(turn, 'waiting');
      const status = await watch.untilEnded(
        id,
        settings.timeoutMs,
        async () => (await client.getCompaction(id)).status,
      );
      const waited = Date.now() - waitStarted;
      waitMs += waited;
      active = null;
      const checkStarted = Date.now();
      const { record, served, activeAfter } = await recordCompaction(client, state, {
        id,
        triggeredAtTurn,
        endedAtTurn: turn,
        waitedMs: waited,
      });
      if (status === null)
        record.error ??= {
          code: 'replay_timeout',
          message: `not ended within ${settings.timeoutMs / 1000} s`,
        };
      timing.checkMs += Date.now() - checkStarted;
      compactions.push(record);
      if (served) {
        ({ tokens: servedTokens, estimate } = served);
        contextReduced = true;
      }
      // Appends outran it: the next compaction committed with its completion (active in the status
      // read since, named by its `session.compacted`); an agent waits for it too before its call.
      const after = activeAfter ?? watch.followUpOf(id) ?? next?.id ?? null;
      if (after && !compactions.some((c) => c.id === after)) {
        record.followedBy = after;
        active = { id: after, triggeredAtTurn: next?.id === after ? next.triggeredAtTurn : turn };
        next = null;
        await settle(turn, block);
      }
    };

    for (const [index, stored] of transcript.messages.entries()) {
      const turn = index + 1;
      // A model call needs the compacted context: the agent waits for an active compaction.
      await settle(index, stored.role === 'assistant');
      if (watch.prunes.parts > 0) contextReduced = true;
      if (stored.role === 'assistant' && !contextReduced)
        overhead ??= measureOverhead(stored.usage, servedTokens, estimate);
      const usage =
        stored.role === 'assistant'
          ? usageToSend(stored.usage, {
              contextReduced,
              window: settings.window,
              servedTokens,
              estimate,
              overhead: overhead ?? 0,
              mode: settings.usage,
            })
          : null;
      let split: CallCache | null = null;
      if (stored.role === 'assistant' && settings.agentModel) {
        const promptStarted = Date.now();
        const call = await readModelCall(client, sessionId, stored, overhead ?? 0);
        split = callCache(calls.at(-1) ?? null, call, settings.agentModel.cache);
        calls.push(call);
        timing.promptMs += Date.now() - promptStarted;
      }
      if (stored.role === 'assistant' && settings.callLatencyMs) {
        // The agent's model answers after its own latency; workers (drafts, prunes) run meanwhile.
        await new Promise((resolve) => setTimeout(resolve, settings.callLatencyMs));
        timing.callMs += settings.callLatencyMs;
      }
      const { usage: _recorded, ...rest } = stored;
      // Priced calls report the cache as the provider would have, unless the transcript's own
      // cache figures still describe the prompt (recorded, nothing removed yet).
      const reported =
        usage && split && (contextReduced || usage.cacheRead + usage.cacheWrite === 0)
          ? withCacheSplit(usage, split)
          : usage;
      const message = reported ? { ...rest, usage: reported } : rest;
      const prunesBefore = watch.prunes.jobs;
      const appendStarted = Date.now();
      const response = await client.appendMessages(sessionId, [message]);
      const answeredAt = Date.now();
      timing.appendMs += answeredAt - appendStarted;
      seqs.push(response.messages[0]!.seq);
      servedTokens = response.status.tokens;
      estimate = response.status.estimate;
      usable = response.status.usable!;
      points.push({ turn, role: stored.role, tokens: servedTokens });
      const started = response.compaction ?? response.status.activeCompaction;
      if (started && !crossings.some((c) => c.compactionId === started.id))
        crossings.push({
          turn,
          compactionId: started.id,
          answeredAt,
          endedAtAnswer: TERMINAL_STATUSES.has(started.status),
        });
      if (
        started &&
        !TERMINAL_STATUSES.has(started.status) &&
        !compactions.some((c) => c.id === started.id)
      ) {
        if (!active) active = { id: started.id, triggeredAtTurn: turn };
        else if (started.id !== active.id) next = { id: started.id, triggeredAtTurn: turn };
      }
      progress(turn, 'appending');
      // A finished turn may have queued a prune job (the answer's `prune`; an API too old to say
      // queues one whenever the policy prunes): the user's next request comes after it ran, as it
      // would after a human's pause, so every run takes the same path.
      // A prune that waited for the prompt cache (`jobId: null`, `skipped`) queued no job.
      if (response.prune && response.prune.jobId === null) prunesSkipped++;
      const pruneQueued =
        response.prune === undefined
          ? finishesTurn(stored) && effective.prune === true
          : response.prune !== null && response.prune.jobId !== null;
      if (pruneQueued && !active) {
        const pruneStarted = Date.now();
        await watch.untilPruned(prunesBefore, settings.pruneWaitMs);
        timing.pruneWaitMs += Date.now() - pruneStarted;
      }
    }
    await settle(transcript.messages.length, true);
    progress(transcript.messages.length, 'done');
    return report('completed', null);
  } catch (error) {
    onProgress({
      appended: seqs.length,
      total: transcript.messages.length,
      tokens: 0,
      usable,
      compactions: compactions.length,
      state: 'failed',
    });
    return report('failed', describeError(error));
  } finally {
    events?.close();
  }
}

/** A run's error as the report gives it: an API error with its request and status. */
function describeError(error: unknown): string {
  if (error instanceof CompactorApiError)
    return `${error.request} → ${error.status} ${error.code}: ${error.message}`;
  return (error as Error).message;
}
