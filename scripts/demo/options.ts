/** The demo's command line and environment, read once. */
import { readFileSync } from 'node:fs';
import type { MessageInput } from '@compactor/db';
import { PlacementError, scratchPlacement, type ScratchPlacement } from '@compactor/stack';
import { generateCodingSession } from '@compactor/testing/fixtures';

export const USAGE = `usage: npm run demo -- [options]       (or: bash scripts/demo.sh [options])

  --session FILE[:N]  replay session N (default 0) of a JSONL file of { "messages": [...] } lines
  --turns N           follow-up requests in the built-in coding session (1-8, default 6)
  --workers N         worker processes to start (1-4, default 2)
  --pace MS           pause between two appends, like an agent waiting for its model (default 60)
  --timeout S         how long to wait for the compactions (default 30, 180 with a real provider)
  --database NAME     a scratch database on DATABASE_URL's server, recreated by every run that
                      names it and kept after it (or DEMO_DATABASE); only a database the demo
                      created is ever dropped. Default: compactor_demo_<time>_<hex>, this run's
                      own, dropped when it ends
  --queue-prefix P    the queue prefix whose Redis keys the demo deletes and uses (or
                      DEMO_QUEUE_PREFIX; default {compactor-demo-<time>-<hex>}, deleted at the end)

Environment: DATABASE_URL (its server), REDIS_URL, DEMO_DATABASE, DEMO_QUEUE_PREFIX, and
OPENAI_API_KEY / OPENAI_BASE_URL (+ LLM_SUMMARIZER_MODEL) to summarise with a real provider
instead of the bundled stub.`;

/** Lines per file read in the built-in session: with them, it outgrows the 32k window. */
const FILE_LINES = 300;

/** A bad option: the message and the usage, no stack trace. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface DemoOptions {
  messages: MessageInput[];
  /** Where the messages come from, for the output. */
  source: string;
  /** The built-in session, whose facts the demo checks after compaction. */
  builtIn: boolean;
  workers: number;
  paceMs: number;
  timeoutMs: number;
  databaseUrl: string;
  redisUrl: string;
  /** The scratch database (on `databaseUrl`'s server) and queue prefix the demo wipes and uses. */
  placement: ScratchPlacement;
  /** `null`: the bundled stub. */
  provider: { baseUrl: string | null; model: string } | null;
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): DemoOptions {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') throw new UsageError('');
    const [name, inline] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    if (
      !['--session', '--turns', '--workers', '--pace', '--timeout', '--database', '--queue-prefix'].includes(
        name,
      )
    ) {
      throw new UsageError(`unknown option ${arg}`);
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`${name} needs a value`);
    flags.set(name, value);
  }
  const int = (name: string, fallback: number, min: number, max: number) => {
    const raw = flags.get(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new UsageError(`${name} must be an integer from ${min} to ${max}, got ${raw}`);
    }
    return value;
  };

  const real = env.OPENAI_API_KEY !== undefined || env.OPENAI_BASE_URL !== undefined;
  const session = flags.get('--session');
  const databaseUrl = env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor';
  const turns = int('--turns', 6, 1, 8);
  return {
    ...(session
      ? loadSessionFile(session)
      : { messages: generateCodingSession({ turns, fileLines: FILE_LINES }), source: '' }),
    builtIn: session === undefined,
    workers: int('--workers', 2, 1, 4),
    paceMs: int('--pace', 60, 0, 10_000),
    timeoutMs: int('--timeout', real ? 180 : 30, 1, 3600) * 1000,
    databaseUrl,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    placement: placementOf(flags, env, databaseUrl),
    provider: real
      ? {
          baseUrl: env.OPENAI_BASE_URL ?? null,
          model: env.LLM_SUMMARIZER_MODEL ?? env.SUMMARIZER_MODEL ?? 'gpt-4o-mini',
        }
      : null,
  };
}

function placementOf(
  flags: Map<string, string>,
  env: NodeJS.ProcessEnv,
  databaseUrl: string,
): ScratchPlacement {
  try {
    return scratchPlacement(
      {
        database: flags.get('--database') ?? env.DEMO_DATABASE,
        queuePrefix: flags.get('--queue-prefix') ?? env.DEMO_QUEUE_PREFIX,
      },
      { database: 'compactor_demo', queuePrefix: '{compactor-demo}' },
      databaseUrl,
      { database: '--database (DEMO_DATABASE)', queuePrefix: '--queue-prefix (DEMO_QUEUE_PREFIX)' },
    );
  } catch (error) {
    if (error instanceof PlacementError) throw new UsageError(error.message);
    throw error;
  }
}

function loadSessionFile(spec: string): { messages: MessageInput[]; source: string } {
  const match = /^(.*?)(?::(\d+))?$/.exec(spec)!;
  const file = match[1]!;
  const index = Number(match[2] ?? 0);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--session: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`);
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (index >= lines.length)
    throw new UsageError(`--session: ${file} has ${lines.length} sessions, no ${index}`);
  let chosen: { messages?: unknown };
  try {
    chosen = JSON.parse(lines[index]!) as { messages?: unknown };
  } catch (error) {
    throw new UsageError(`--session: line ${index + 1} of ${file} is not JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(chosen.messages) || chosen.messages.length === 0) {
    throw new UsageError(`--session: line ${index + 1} of ${file} has no "messages" array`);
  }
  return { messages: chosen.messages as MessageInput[], source: `${file}:${index}` };
}
