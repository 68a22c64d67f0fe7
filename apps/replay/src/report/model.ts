/**
 * The replay's report: what `report.json` holds, what the terminal table and `report.html` are
 * rendered from. Plain data; {@link runTotals} derives every figure the renderers show.
 */
import type { ContextIssue } from '@compactor/core';
import type { TranscriptFormat } from '../transcript';
import type { RetentionProbes } from '../probes/retention';
import type { PromptCacheCost } from '../cache-cost';
import type { RecallProbe } from '../probes/recall';
import type { TasksProbe } from '../probes/tasks';

export type Outcome = 'summarized' | 'truncated' | 'skipped' | 'failed' | 'unfinished';

/** How the replay treats the usage the original transcript recorded (see usage.ts). */
export type UsageMode = 'rescale' | 'drop';

/** One policy × summarizer model the transcripts are replayed under. */
export interface Variant {
  /** `opencode`, `strict.json`, … plus the model when several are compared. */
  label: string;
  policyLabel: string;
  /** The policy input sent with the session (a preset and overrides). */
  policy: Record<string, unknown>;
  summarizerModel: string | null;
}

/** The session after one appended message. */
export interface TurnPoint {
  /** 1-based index of the message in the transcript. */
  turn: number;
  role: string;
  /** The API's estimate of the next prompt (`status.tokens`). */
  tokens: number;
}

export interface ContextCheck {
  messages: number;
  tokens: number;
  usable: number;
  withinWindow: boolean;
  /**
   * The session's pinned system messages alone exceed the usable input (`status.cannotFit`): the
   * one case no compaction can fix, reported as such rather than counted against the window.
   * Absent in older reports.
   */
  cannotFit?: boolean;
  /** Problems a provider would reject the OpenAI rendering for (orphaned results, dangling calls …). */
  issues: ContextIssue[];
  valid: boolean;
}

export interface CompactionRecord {
  id: string;
  reason: string;
  strategy: string;
  outcome: Outcome;
  /** The turn whose append triggered it, and the last turn appended before it ended. */
  triggeredAtTurn: number;
  endedAtTurn: number;
  tokensBefore: number | null;
  tokensAfter: number | null;
  prunedParts: number;
  prunedTokens: number;
  llm: { model: string; input: number; output: number; costUsd: number | null } | null;
  /**
   * What the compaction cost in the provider's prompt cache, as the API records it (null when it
   * did not complete). Absent in older reports.
   */
  cache?: {
    invalidatedTokens: number;
    rewriteCostUsd: number | null;
    savingPerTurnUsd: number | null;
    breakEvenTurns: number | null;
  } | null;
  /** Server side: requested → finished. */
  latencyMs: number | null;
  /** How long the replay (the agent) waited for it before its next model call. */
  waitedMs: number;
  error: { code: string; message: string } | null;
  /** The context served right after it (completed compactions only). */
  context: ContextCheck | null;
  /**
   * A compaction that started as this one ended (a follow-up: messages appended while it ran left
   * the session over its trigger). The agent's next model call waited for that one, so this
   * context was never sent; the within-window score leaves it out. Absent in older reports.
   */
  followedBy?: string | null;
  retention: RetentionProbes | null;
  /**
   * What the recall route found again of the facts the context lost (completed compactions; null
   * when the API has no recall route). Absent in older reports.
   */
  recall?: RecallProbe | null;
  /**
   * The sub-agents and background tasks the compaction covered: alive in the context, delivered
   * late, finished, lost (completed compactions). Absent in older reports.
   */
  tasks?: TasksProbe | null;
}

export interface RunReport {
  /** The transcript's key (file, line or session id). */
  transcript: string;
  file: string;
  format: TranscriptFormat;
  messages: number;
  variant: Variant;
  /** The Compactor session the run created. */
  sessionId: string;
  window: number;
  usable: number;
  status: 'completed' | 'failed';
  error: string | null;
  /** Wall time of the run, and the part spent waiting for compactions. */
  durationMs: number;
  waitMs: number;
  /**
   * Where the rest of the time went: appends (HTTP round trips), prune waits, post-compaction
   * checks, reading each model call's prompt (with `--model`) and the agent's own calls
   * (`--call-latency`).
   */
  timing: { appendMs: number; pruneWaitMs: number; checkMs: number; promptMs?: number; callMs?: number };
  points: TurnPoint[];
  compactions: CompactionRecord[];
  prunes: { jobs: number; parts: number; tokens: number };
  /** After-turn prunes that waited for the prompt cache (the append's `prune.skipped`). Absent in older reports. */
  prunesSkipped?: number;
  /**
   * The agent's own model calls priced through the prompt cache of `model` (`--model`; see
   * cache-cost.ts). Absent in older reports and without `--model`.
   */
  promptCache?: (PromptCacheCost & { model: string }) | null;
  /** Every trigger crossing and the agent's wait at it (see trigger-waits.ts). Absent in older reports. */
  triggerWaits?: TriggerWait[];
}

/**
 * An append after which a compaction started, and how long from that append's answer until the
 * compaction (and any follow-up the worker chained to it) ended: the context fit again. `null`
 * when it never ended within the run's timeout.
 */
export interface TriggerWait {
  turn: number;
  compactionId: string;
  waitMs: number | null;
}

export interface ReplayReport {
  version: 1;
  startedAt: string;
  finishedAt: string;
  target: { kind: 'embedded' | 'remote'; url: string; llm: string };
  window: number;
  usage: UsageMode;
  runs: RunReport[];
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** The median of `values` (null when empty). */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}

/** A kept / total pair. */
export interface Score {
  kept: number;
  total: number;
}

/**
 * Probe items (counted over every compaction): present in the context served (verbatim, whitespace
 * collapsed; a file also when its ledger group names it, or a directory the ledger names for the
 * files it had no room to list), recoverable (not present, but recall
 * returns it verbatim), of all checked.
 */
export interface Presence {
  present: number;
  recoverable: number;
  total: number;
}

export interface RunTotals {
  compactions: number;
  byOutcome: Record<Outcome, number>;
  /** Σ (before − after) over completed compactions. */
  tokensSaved: number;
  prunedTokens: number;
  /** Σ cached prompt tokens the run's compactions invalidated (their `cache.invalidatedTokens`). */
  cacheInvalidatedTokens: number;
  llmInput: number;
  llmOutput: number;
  /** null when no call had a known price. */
  costUsd: number | null;
  latencyMedianMs: number | null;
  latencyMaxMs: number | null;
  validContexts: Score;
  withinWindow: Score;
  files: Presence;
  goal: Presence;
  constraints: Presence;
  /** The facts the user stated (identifiers, versions, quantities, URLs). */
  facts: Presence;
  latestRequest: Presence;
  /** The tasks the run's compactions covered, summed over them (the tasks probe). */
  tasks: TasksProbe;
  /** Goals and constraints not verbatim whose content words the summary holds, of all of them. */
  paraphrased: Score;
  peakTokens: number;
  finalTokens: number;
}

const score = (flags: boolean[]): Score => ({ kept: flags.filter(Boolean).length, total: flags.length });

const PROBE_KINDS = ['file', 'goal', 'constraint', 'fact', 'latest'] as const;
type ProbeKind = (typeof PROBE_KINDS)[number];

/** Presence of each probe kind over a run's compactions. */
function presence(compactions: readonly CompactionRecord[]): Record<ProbeKind, Presence> {
  const out = Object.fromEntries(
    PROBE_KINDS.map((kind) => [kind, { present: 0, recoverable: 0, total: 0 }]),
  ) as Record<ProbeKind, Presence>;
  const add = (kind: ProbeKind, present: boolean) => {
    out[kind].total++;
    if (present) out[kind].present++;
  };
  for (const c of compactions) {
    const r = c.retention;
    if (!r) continue;
    for (const file of r.files) add('file', file.named !== null);
    if (r.goal) add('goal', r.goal.where === 'verbatim');
    for (const constraint of r.constraints) add('constraint', constraint.where === 'verbatim');
    for (const fact of r.facts ?? []) add('fact', fact.where === 'verbatim');
    if (r.latestRequest) add('latest', r.latestRequest.where === 'verbatim');
    for (const fact of c.recall?.facts ?? []) if (fact.found) out[fact.kind].recoverable++;
  }
  return out;
}

/** The tasks probes of a run's compactions added up (older reports have none). */
function taskTotals(compactions: readonly CompactionRecord[]): TasksProbe {
  const total: TasksProbe = { compacted: 0, alive: 0, deliveredLate: 0, finished: 0, lost: 0 };
  for (const c of compactions) {
    if (!c.tasks) continue;
    for (const key of Object.keys(total) as (keyof TasksProbe)[]) total[key] += c.tasks[key];
  }
  return total;
}

/** Every figure the table and the HTML show for one run. Retention counts every probe of every compaction. */
export function runTotals(run: RunReport): RunTotals {
  const byOutcome: Record<Outcome, number> = {
    summarized: 0,
    truncated: 0,
    skipped: 0,
    failed: 0,
    unfinished: 0,
  };
  for (const c of run.compactions) byOutcome[c.outcome]++;
  const done = run.compactions.filter((c) => c.outcome === 'summarized' || c.outcome === 'truncated');
  const latencies = run.compactions.flatMap((c) => (c.latencyMs === null ? [] : [c.latencyMs]));
  const costs = run.compactions.flatMap((c) => (c.llm?.costUsd == null ? [] : [c.llm.costUsd]));
  const contexts = run.compactions.flatMap((c) => (c.context ? [c.context] : []));
  const probes = run.compactions.flatMap((c) => (c.retention ? [c.retention] : []));
  const kept = presence(run.compactions);
  return {
    compactions: run.compactions.length,
    byOutcome,
    tokensSaved: sum(done.map((c) => Math.max(0, (c.tokensBefore ?? 0) - (c.tokensAfter ?? 0)))),
    prunedTokens: sum(run.compactions.map((c) => c.prunedTokens)) + run.prunes.tokens,
    cacheInvalidatedTokens: sum(run.compactions.map((c) => c.cache?.invalidatedTokens ?? 0)),
    llmInput: sum(run.compactions.map((c) => c.llm?.input ?? 0)),
    llmOutput: sum(run.compactions.map((c) => c.llm?.output ?? 0)),
    costUsd: costs.length === 0 ? null : sum(costs),
    latencyMedianMs: median(latencies),
    latencyMaxMs: latencies.length === 0 ? null : Math.max(...latencies),
    validContexts: score(contexts.map((c) => c.valid)),
    // The contexts an agent would send (one a follow-up compaction replaced never was), but for
    // those whose pinned system messages alone exceed the window: no compaction can fit them.
    withinWindow: score(
      run.compactions.flatMap((c) =>
        c.context && !c.followedBy && !c.context.cannotFit ? [c.context.withinWindow] : [],
      ),
    ),
    files: kept.file,
    goal: kept.goal,
    constraints: kept.constraint,
    facts: kept.fact,
    latestRequest: kept.latest,
    tasks: taskTotals(run.compactions),
    paraphrased: score(
      probes.flatMap((p) =>
        [...(p.goal ? [p.goal] : []), ...p.constraints].map((f) => f.where === 'paraphrased'),
      ),
    ),
    peakTokens: Math.max(0, ...run.points.map((p) => p.tokens)),
    finalTokens: run.points.at(-1)?.tokens ?? 0,
  };
}

/** The runs grouped by transcript, in the order they were given (the side-by-side comparisons). */
export function runsByTranscript(report: ReplayReport): Map<string, RunReport[]> {
  const groups = new Map<string, RunReport[]>();
  for (const run of report.runs) {
    const group = groups.get(run.transcript) ?? [];
    group.push(run);
    groups.set(run.transcript, group);
  }
  return groups;
}
