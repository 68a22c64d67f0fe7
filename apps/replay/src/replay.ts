/**
 * `compactor replay`: reads the transcripts, starts an embedded Compactor (or connects to one),
 * replays every transcript under every variant, several at a time, and writes the report
 * (terminal table, report.json, report.html).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CompactorClient, type CompactorClientOptions } from '@compactor/client';
import {
  checkPostgres,
  checkRedis,
  Children,
  deleteQueueKeys,
  dropDatabase,
  recreateScratchDatabase,
  ServiceMissingError,
  startStack,
  withDatabase,
  type ChildLogLine,
} from '@compactor/stack';
import { resolveCacheModel } from '@compactor/core';
import { parseTranscriptText } from './formats/detect';
import { UsageError, type ReplayOptions } from './options';
import { mapConcurrent } from './pool';
import { ProgressBoard, type Output } from './progress';
import { renderHtml } from './report/html';
import type { ReplayReport, RunReport } from './report/model';
import { renderTable } from './report/table';
import { renderCostTable } from './report/cost-table';
import { replayRun, type RunTarget } from './runner/replay-run';
import type { Transcript } from './transcript';
import { resolveVariants } from './variants';

const API_KEY = 'replay-key';

/**
 * How the replay's client calls the API: no retries. A refusal (429, 503) fails the run with its
 * error rather than being waited out inside the time an append is measured to take.
 */
export const REPLAY_CLIENT: Omit<CompactorClientOptions, 'baseUrl' | 'apiKey'> = {
  retry: { maxRetries: 0 },
};

export interface ReplayIo {
  env: NodeJS.ProcessEnv;
  out: Output;
  /** Child processes of the embedded Compactor: the caller stops them (also on a signal). */
  children?: Children;
}

/** Where the embedded Compactor keeps its data; tests hand in their own database and prefix. */
export interface EmbeddedPlacement {
  databaseUrl: string;
  /** Create it afresh first, as a scratch database (`recreateScratchDatabase`; the API migrates it). */
  recreate: boolean;
  queuePrefix: string;
  /** The database and queue keys that are the run's own, removed once its processes stopped. */
  removeAfter?: { database: boolean; queuePrefix: boolean };
}

export interface ReplayResult {
  report: ReplayReport;
  jsonPath: string;
  htmlPath: string;
}

export function loadTranscripts(files: readonly string[]): Transcript[] {
  const transcripts = files.flatMap((file) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new UsageError(
        `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
    return parseTranscriptText(text, file);
  });
  // The same file twice (or two files of one name): keys stay unique in the report.
  const seen = new Map<string, number>();
  return transcripts.map((t) => {
    const n = (seen.get(t.key) ?? 0) + 1;
    seen.set(t.key, n);
    return n === 1 ? t : { ...t, key: `${t.key} (${n})` };
  });
}

async function startEmbedded(
  options: ReplayOptions,
  io: ReplayIo,
  placement: EmbeddedPlacement,
  children: Children,
) {
  const checks = await Promise.allSettled([
    checkPostgres(placement.databaseUrl, options.fromEnv.database),
    checkRedis(options.redisUrl, options.fromEnv.redis),
  ]);
  const missing = checks.flatMap((c) => (c.status === 'rejected' ? [c.reason as Error] : []));
  if (missing.length > 0) {
    if (missing.some((error) => !(error instanceof ServiceMissingError))) throw missing[0];
    throw new ServiceMissingError(missing.map((error) => error.message).join('\n\n'));
  }
  await Promise.all([
    placement.recreate ? recreateScratchDatabase(placement.databaseUrl, 'replay') : Promise.resolve(),
    deleteQueueKeys(options.redisUrl, placement.queuePrefix),
  ]);
  const stack = await Promise.race([
    startStack(children, {
      databaseUrl: placement.databaseUrl,
      redisUrl: options.redisUrl,
      queuePrefix: placement.queuePrefix,
      apiKey: API_KEY,
      workers: options.workers,
      provider: options.provider,
      // Enough slots for every concurrent session's compaction and prune jobs.
      workerEnv: { WORKER_CONCURRENCY: String(Math.max(4, options.concurrency * 2)) },
      // Every replayed session is the one tenant's: past 20 at once, the cap on a tenant's active
      // compactions would hold auto compactions back and change what the replay measures.
      apiEnv: { TENANT_MAX_ACTIVE_COMPACTIONS: '0' },
      client: REPLAY_CLIENT,
    }),
    children.failed(),
  ]);
  if (stack.stubUrl && options.summarizerLatencyMs > 0)
    await setStubLatency(stack.stubUrl, options.summarizerLatencyMs);
  io.out.write(
    `embedded Compactor: API ${stack.apiUrl}, ${options.workers} worker(s), LLM ${stack.stubUrl ? `stub ${stack.stubUrl}` : options.provider!.model}\n`,
  );
  return stack;
}

/** Makes the embedded LLM stub answer every request after `latencyMs` (its fault settings). */
async function setStubLatency(stubUrl: string, latencyMs: number): Promise<void> {
  const response = await fetch(`${stubUrl.replace(/\/v1\/?$/, '')}/_stub/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ latencyMs }),
  });
  if (!response.ok) throw new Error(`PUT /_stub/faults → ${response.status}: ${await response.text()}`);
}

/** Throws unless the remote API is ready (`GET /readyz`, a probe outside the client's routes). */
async function checkReady(url: string, key: string | null): Promise<void> {
  const response = await fetch(`${url}/readyz`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /readyz → ${response.status}: ${text.slice(0, 500)}`);
}

export async function runReplay(
  options: ReplayOptions,
  io: ReplayIo,
  placement: EmbeddedPlacement = {
    databaseUrl: withDatabase(options.databaseUrl, options.placement.database),
    recreate: true,
    queuePrefix: options.placement.queuePrefix,
    ...(options.placement.perRun ? { removeAfter: options.placement.perRun } : {}),
  },
): Promise<ReplayResult> {
  const transcripts = loadTranscripts(options.files);
  const variants = resolveVariants(options.policies, options.summarizerModels);
  const startedAt = new Date();
  const children =
    io.children ?? new Children(io.env, ({ child, msg }: ChildLogLine) => io.out.write(`${child}: ${msg}\n`));
  let target: RunTarget;
  let targetInfo: ReplayReport['target'];
  if (options.remote) {
    const { url, key } = options.remote;
    await checkReady(url, key);
    target = {
      client: new CompactorClient({ ...REPLAY_CLIENT, baseUrl: url, apiKey: key }),
      defaultModel: 'gpt-4o-mini',
    };
    targetInfo = { kind: 'remote', url: options.remote.url, llm: 'the remote workers’' };
  } else {
    const stack = await startEmbedded(options, io, placement, children);
    target = {
      client: stack.client,
      defaultModel: options.provider?.model ?? 'stub-summarizer',
      anyModel: !options.provider,
    };
    targetInfo = {
      kind: 'embedded',
      url: stack.apiUrl,
      llm: options.provider
        ? options.provider.model
        : options.summarizerLatencyMs > 0
          ? `stub (${options.summarizerLatencyMs} ms latency)`
          : 'stub (zero latency)',
    };
  }

  try {
    const stamp = startedAt.toISOString().replace(/\D/g, '').slice(0, 17);
    const jobs = transcripts.flatMap((transcript) => variants.map((variant) => ({ transcript, variant })));
    const board = new ProgressBoard(io.out);
    const runs: RunReport[] = await Promise.race([
      mapConcurrent(jobs, options.concurrency, ({ transcript, variant }, i) =>
        replayRun(
          target,
          {
            window: options.window,
            usage: options.usage,
            timeoutMs: options.timeoutMs,
            pruneWaitMs: 3_000,
            agentModel: options.model ? { id: options.model, cache: resolveCacheModel(options.model) } : null,
            callLatencyMs: options.callLatencyMs,
          },
          transcript,
          variant,
          `replay-${stamp}-${i + 1}`,
          (progress) => board.update(`${transcript.key} · ${variant.label}`, progress),
        ),
      ),
      children.failed(),
    ]);
    board.finish();
    const report: ReplayReport = {
      version: 1,
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      target: targetInfo,
      window: options.window,
      usage: options.usage,
      runs,
    };
    const outDir = resolve(options.outDir);
    mkdirSync(outDir, { recursive: true });
    const jsonPath = join(outDir, 'report.json');
    const htmlPath = join(outDir, 'report.html');
    writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(htmlPath, renderHtml(report));
    const costs = renderCostTable(report);
    io.out.write(
      `\n${renderTable(report)}\n${costs ? `\n${costs}\n` : ''}\nwrote ${jsonPath}\nwrote ${htmlPath}\n`,
    );
    return { report, jsonPath, htmlPath };
  } finally {
    if (!io.children || (!options.remote && placement.removeAfter))
      await children.stopAll({ last: ['llm-stub'] });
    if (!options.remote) await removeRunPlacement(options.redisUrl, placement, io.out);
  }
}

/** Drops the run's own scratch database and deletes its queue keys (chosen ones stay for a look). */
async function removeRunPlacement(
  redisUrl: string,
  placement: EmbeddedPlacement,
  out: Output,
): Promise<void> {
  const remove = placement.removeAfter;
  await Promise.all([
    remove?.database ? dropDatabase(placement.databaseUrl) : null,
    remove?.queuePrefix ? deleteQueueKeys(redisUrl, placement.queuePrefix) : null,
  ]).catch((error: Error) => out.write(`could not remove this run's scratch data: ${error.message}\n`));
}
