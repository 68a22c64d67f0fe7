/** The replay's command line and environment, read once and validated. */
import { PlacementError, scratchPlacement, type ScratchPlacement } from '@compactor/stack';
import type { UsageMode } from './report/model';

export const USAGE = `usage: npm run replay -- <file>... [options]      (or: compactor replay <file>... [options])

  <file>                    transcripts: JSONL of { "messages": [...] } (the API's format), a Claude Code
                            session (.jsonl), a Codex CLI rollout (.jsonl), or a JSON array of Chat
                            Completions messages; the format is detected from the content
  --policy P                a preset (opencode, opal, klaude, topic) or a JSON file with a policy
                            ({ "preset": …, overrides }); repeat to compare (default: the default policy)
  --summarizer-model M      summarize with model M; repeat to compare (default: the session's model)
  --window N                the replayed model's context window in tokens (default 32000)
  --concurrency N           sessions replayed at once (default 4)
  --out DIR                 where report.json and report.html go (default replay-report)
  --usage rescale|drop      what to send as provider usage once the context was compacted (default rescale)
  --timeout S               how long one compaction may take (default 120)
  --model M                 the replayed agent's model (a catalog id, e.g. claude-sonnet-4-5): the
                            session's model, and every model call's prompt is read back and priced
                            through M's prompt cache (cache reads, writes, uncached input)
  --call-latency MS         how long each of the agent's model calls takes: the replay waits this long
                            before appending an assistant message (default 0)
  --summarizer-latency MS   the embedded LLM stub answers after MS (default 0; not with a provider)
  --url URL --key KEY       replay against a running Compactor instead of starting one
  --workers N               worker processes of the embedded Compactor (default 1)
  --database NAME           the embedded Compactor's scratch database on DATABASE_URL's server,
                            recreated by every run that names it and kept after it (or
                            REPLAY_DATABASE); only a database the replay created is ever dropped.
                            Default: compactor_replay_<time>_<hex>, the run's own, dropped at its end
  --queue-prefix P          its queue prefix, whose Redis keys are deleted first (or
                            REPLAY_QUEUE_PREFIX; default {compactor-replay-<time>-<hex>}, deleted at the end)

Without --url the replay starts its own Compactor (API, worker, and the LLM stub unless
OPENAI_API_KEY / OPENAI_BASE_URL name a provider; LLM_SUMMARIZER_MODEL names its model) on that
database of DATABASE_URL's server, and REDIS_URL.`;

/** A bad option: the message and the usage, no stack trace. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface ReplayOptions {
  files: string[];
  policies: string[];
  summarizerModels: string[];
  window: number;
  concurrency: number;
  outDir: string;
  usage: UsageMode;
  timeoutMs: number;
  workers: number;
  /** A running Compactor, or `null` to start one. */
  remote: { url: string; key: string | null } | null;
  databaseUrl: string;
  redisUrl: string;
  /** The embedded Compactor's scratch database (on `databaseUrl`'s server) and queue prefix. */
  placement: ScratchPlacement;
  /** Which of DATABASE_URL / REDIS_URL came from the environment (for the "not reachable" advice). */
  fromEnv: { database: boolean; redis: boolean };
  /** The replayed agent's model (`--model`): prices its prompts through the prompt cache; `null`: not priced. */
  model: string | null;
  /** How long each of the agent's model calls takes, in ms. */
  callLatencyMs: number;
  /** The embedded stub's latency per request, in ms. */
  summarizerLatencyMs: number;
  /** `null`: the bundled stub. */
  provider: { baseUrl: string | null; model: string } | null;
}

const REPEATABLE = new Set(['--policy', '--summarizer-model']);
const SINGLE = new Set([
  '--window',
  '--concurrency',
  '--out',
  '--usage',
  '--timeout',
  '--url',
  '--key',
  '--workers',
  '--database',
  '--queue-prefix',
  '--model',
  '--call-latency',
  '--summarizer-latency',
]);

export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv): ReplayOptions {
  const files: string[] = [];
  const repeated = new Map<string, string[]>();
  const single = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') throw new UsageError('');
    if (!arg.startsWith('--')) {
      files.push(arg);
      continue;
    }
    const [name, inline] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    if (!REPEATABLE.has(name) && !SINGLE.has(name)) throw new UsageError(`unknown option ${arg}`);
    const value = inline ?? argv[++i];
    if (value === undefined || value === '') throw new UsageError(`${name} needs a value`);
    if (REPEATABLE.has(name)) repeated.set(name, [...(repeated.get(name) ?? []), value]);
    else if (single.has(name)) throw new UsageError(`${name} given twice`);
    else single.set(name, value);
  }
  if (files.length === 0) throw new UsageError('name at least one transcript file');
  const int = (name: string, fallback: number, min: number, max: number) => {
    const raw = single.get(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new UsageError(`${name} must be an integer from ${min} to ${max}, got ${raw}`);
    }
    return value;
  };
  const usage = single.get('--usage') ?? 'rescale';
  if (usage !== 'rescale' && usage !== 'drop')
    throw new UsageError(`--usage must be rescale or drop, got ${usage}`);
  const url = single.get('--url');
  if (single.has('--key') && !url) throw new UsageError('--key goes with --url');
  if (url && !/^https?:\/\/\S+$/.test(url)) throw new UsageError(`--url must be an http(s) URL, got ${url}`);
  if (url && (single.has('--database') || single.has('--queue-prefix')))
    throw new UsageError("--database and --queue-prefix name the embedded Compactor's: not with --url");
  const real = env.OPENAI_API_KEY !== undefined || env.OPENAI_BASE_URL !== undefined;
  if (single.has('--summarizer-latency') && (url || real))
    throw new UsageError('--summarizer-latency sets the embedded LLM stub: not with --url or a provider');
  const model = single.get('--model') ?? null;
  if (model !== null && !/^[\w.:/@-]{1,200}$/.test(model))
    throw new UsageError(`--model must be a model id (letters, digits, . : / @ _ -), got ${model}`);
  const databaseUrl = env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor';
  let placement: ScratchPlacement;
  try {
    placement = scratchPlacement(
      {
        database: single.get('--database') ?? env.REPLAY_DATABASE,
        queuePrefix: single.get('--queue-prefix') ?? env.REPLAY_QUEUE_PREFIX,
      },
      { database: 'compactor_replay', queuePrefix: '{compactor-replay}' },
      databaseUrl,
      { database: '--database (REPLAY_DATABASE)', queuePrefix: '--queue-prefix (REPLAY_QUEUE_PREFIX)' },
    );
  } catch (error) {
    if (error instanceof PlacementError) throw new UsageError(error.message);
    throw error;
  }
  return {
    files,
    policies: repeated.get('--policy') ?? [],
    summarizerModels: repeated.get('--summarizer-model') ?? [],
    window: int('--window', 32_000, 1_000, 10_000_000),
    concurrency: int('--concurrency', 4, 1, 64),
    outDir: single.get('--out') ?? 'replay-report',
    usage,
    timeoutMs: int('--timeout', 120, 1, 3_600) * 1_000,
    workers: int('--workers', 1, 1, 8),
    model,
    callLatencyMs: int('--call-latency', 0, 0, 600_000),
    summarizerLatencyMs: int('--summarizer-latency', 0, 0, 600_000),
    remote: url ? { url: url.replace(/\/+$/, ''), key: single.get('--key') ?? null } : null,
    databaseUrl,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    placement,
    fromEnv: { database: env.DATABASE_URL !== undefined, redis: env.REDIS_URL !== undefined },
    provider: real
      ? {
          baseUrl: env.OPENAI_BASE_URL ?? null,
          model: env.LLM_SUMMARIZER_MODEL ?? env.SUMMARIZER_MODEL ?? 'gpt-4o-mini',
        }
      : null,
  };
}
