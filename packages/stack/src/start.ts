/**
 * The real system as local processes: the LLM stub (unless a provider is configured), the API and
 * worker processes, on free ports, sharing one database and one queue prefix. The demo and the
 * replay start it the same way; the caller owns the {@link Children} and stops them.
 */
import { CompactorClient, type CompactorClientOptions } from '@compactor/client';
import { createHttpFetch } from '@compactor/llm';
import type { Child, Children } from './children';

/** A real OpenAI-compatible provider instead of the stub (`OPENAI_*` in the caller's environment). */
export interface StackProvider {
  baseUrl: string | null;
  model: string;
}

export interface StackOptions {
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
  /** The API accepts this bearer key (tenant `local`). */
  apiKey: string;
  workers: number;
  /** `null`: start the bundled LLM stub. */
  provider: StackProvider | null;
  /** Extra worker variables (`WORKER_CONCURRENCY`, `LOG_LEVEL`, …). */
  workerEnv?: Record<string, string>;
  /** Extra API variables (the per-tenant caps, say). */
  apiEnv?: Record<string, string>;
  /** The API's `LOG_LEVEL` (default `info`: the start-up lines are read from its log). */
  apiLogLevel?: string;
  /** How {@link Stack.client} calls the API (its retries, say). */
  client?: Omit<CompactorClientOptions, 'baseUrl' | 'apiKey'>;
}

export interface Stack {
  apiUrl: string;
  /** The API's client, with the stack's key. */
  client: CompactorClient;
  /** The stub's base URL (ending in `/v1`), `null` with a real provider. */
  stubUrl: string | null;
  api: Child;
  stub: Child | null;
  workers: Child[];
  /** Each worker's probe port (`/healthz`, `/metrics`). */
  workerPorts: number[];
}

/** Starts the stub (unless a real provider is configured), the API, then the workers. */
export async function startStack(children: Children, options: StackOptions): Promise<Stack> {
  const shared = {
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: options.queuePrefix,
    HOST: '127.0.0.1',
  };
  const stub = options.provider
    ? null
    : children.start('llm-stub', 'apps/llm-stub/src/main.ts', { PORT: '0', HOST: '127.0.0.1' });
  const api = children.start('api', 'apps/api/src/main.ts', {
    ...shared,
    PORT: '0',
    API_KEYS: `local:${options.apiKey}`,
    MIGRATE_ON_START: 'true',
    LOG_LEVEL: options.apiLogLevel ?? 'info',
    // No line per request: the parent reads every line the API writes.
    REQUEST_LOG_LEVEL: 'debug',
    ...options.apiEnv,
  });
  // Workers refuse an unmigrated database: they start as soon as the API has migrated it (and the
  // stub listens), while the API finishes starting.
  const [stubUrl] = await Promise.all([
    stub?.waitFor('listen', (out) => /OPENAI_BASE_URL=(\S+?)\)/.exec(out)?.[1]) ?? null,
    api.waitFor('migrate the database', (out) =>
      /"msg":"(applied migrations|database schema is up to date)"/.test(out) ? true : undefined,
    ),
  ]);
  const llmEnv: Record<string, string> = stubUrl
    ? { OPENAI_BASE_URL: stubUrl, OPENAI_API_KEY: 'stub' }
    : { LLM_SUMMARIZER_MODEL: options.provider!.model };
  const workers = Array.from({ length: options.workers }, (_, i) =>
    children.start(`worker-${i + 1}`, 'apps/worker/src/main.ts', {
      ...shared,
      ...llmEnv,
      PORT: '0',
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '3000',
      ...options.workerEnv,
    }),
  );
  // Fastify's own line once it listens.
  const apiUrl = await api.waitFor(
    'listen',
    (out) => /"msg":"Server listening at (http:\/\/[^"]+)"/.exec(out)?.[1],
  );
  const workerPorts = await Promise.all(
    workers.map((worker) =>
      worker.waitFor('start', (out) => {
        // A complete line only (the last one may still be arriving).
        const line = out
          .split('\n')
          .slice(0, -1)
          .find((l) => l.includes('"msg":"worker started"'));
        return line ? (JSON.parse(line) as { port: number }).port : undefined;
      }),
    ),
  );
  // Node's http agent with kept-alive connections: global fetch costs the replay ~1 ms of CPU more
  // per request.
  const client = new CompactorClient({
    fetch: createHttpFetch(),
    ...options.client,
    baseUrl: apiUrl,
    apiKey: options.apiKey,
  });
  return { apiUrl, client, stubUrl, api, stub, workers, workerPorts };
}
