/**
 * The real API listening on a local port, over this test file's own database and the test Redis
 * (apps/api's `useTestApi`), optionally with in-process workers whose LLM is the bundled stub:
 * what the client is tested against. Call at the top level of a test file.
 */
import { afterAll, beforeAll, inject } from 'vitest';
import { TENANT_A_KEY, useTestApi, type TestApi } from '@compactor/api/testing';
import { createLlm } from '@compactor/llm';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { silentLog } from '@compactor/workflow';
import { startWorkers, type RunningWorkers } from '@compactor/queue';
import { CompactorClient, type CompactorClientOptions } from '@compactor/client';

/** The listening API, its stub and a client factory. */
export interface LiveApi {
  readonly api: TestApi;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The LLM stub the workers summarise with (only with `workers: true`). */
  readonly stub: LlmStub;
  /** A client of tenant A (by default) that checks every answer against the contract. */
  client(options?: Partial<CompactorClientOptions>): CompactorClient;
}

export function useLiveApi(options: { workers?: boolean } = {}): LiveApi {
  const api = useTestApi();
  let url: string | undefined;
  let stub: LlmStub | undefined;
  let workers: RunningWorkers | undefined;

  beforeAll(async () => {
    url = await api.app.listen({ port: 0, host: '127.0.0.1' });
    if (!options.workers) return;
    stub = await startLlmStub();
    workers = startWorkers(
      {
        db: api.database.db,
        llm: createLlm({ apiKey: 'stub', baseURL: stub.url, timeoutMs: 10_000 }),
        clock: () => new Date(),
        log: silentLog,
        events: api.publisher,
      },
      {
        connection: { url: inject('redisUrl'), maxRetriesPerRequest: null },
        prefix: api.queuePrefix,
        concurrency: 2,
      },
    );
  });

  // Runs before useTestApi's own afterAll (hooks unwind in reverse): stop what uses the API first.
  afterAll(async () => {
    await workers?.close(5_000);
    await stub?.close();
    // fetch (undici) keeps idle keep-alive sockets; they would hold the server's close().
    api.app.server.closeAllConnections();
  });

  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`useLiveApi(): ${what} exists only inside tests and hooks`);
    return value;
  };
  return {
    api,
    get url() {
      return started(url, 'the API');
    },
    get stub() {
      return started(stub, 'the LLM stub (pass workers: true)');
    },
    client(overrides = {}) {
      return new CompactorClient({
        baseUrl: started(url, 'the API'),
        apiKey: TENANT_A_KEY,
        validateResponses: true,
        ...overrides,
      });
    },
  };
}
