import { afterAll, beforeAll, inject } from 'vitest';
import OpenAI from 'openai';
import type { Message } from '@compactor/contract';
import { useTestDatabase, type TestDatabase } from '@compactor/db/testing';
import { answersStored, type DropInSettings } from '@compactor/gateway';
import { createLlm } from '@compactor/llm';
import { startLlmStub, type LlmStub, type LlmStubOptions } from '@compactor/llm-stub';
import { startWorkers, type RunningWorkers } from '@compactor/queue';
import { getTokenizer } from '@compactor/tokenizer';
import { silentLog } from '@compactor/workflow';
import { TENANT_A_KEY } from './api';
import { buildServerOn, type ServerOn } from './server-on';
import { startUpstreamRecorder, type UpstreamRecorder } from './upstream-recorder';

/**
 * A drop-in endpoint as an agent meets it: a real API listening on a port, the LLM stub as its
 * upstream for one provider (behind a recorder of the stub's answers), and, when asked,
 * compaction workers on a second stub (the summarizer), so compactions happen as in production.
 */
export interface DropInApiOf<Client> {
  readonly server: ServerOn;
  readonly database: TestDatabase;
  /** Compactor's base URL for the provider's SDK (`…/v1` for OpenAI's; Anthropic's adds `/v1/messages`). */
  readonly baseURL: string;
  /** The agent's model: what every upstream request looked like. */
  readonly upstream: LlmStub;
  /** What the upstream answered, byte for byte. */
  readonly recorder: UpstreamRecorder;
  /** The provider's SDK configured with only the base URL, a Compactor key and these headers (no retries of its own). */
  client(headers?: Record<string, string>, key?: string): Client;
  /** A session's whole stored history, every page. */
  history(sessionId: string): Promise<Message[]>;
  /** The tenant's sessions, oldest first. */
  sessionIds(): Promise<string[]>;
  /** Rows of sessions, messages and conversation links, every tenant. */
  rowCounts(): Promise<Record<string, number>>;
}

export interface DropInApiOptions {
  workers?: boolean;
  upstream?: LlmStubOptions;
  /** The workers' LLM (a slow one keeps a compaction running). */
  summarizer?: LlmStubOptions;
  dropIn?: Partial<DropInSettings>;
}

/** How one provider's SDK reaches Compactor: its upstream setting, its base URL, its client. */
export interface DropInProvider<Client> {
  protocol: 'openai' | 'anthropic';
  /** Compactor's base URL for the SDK, from the address the API listens on. */
  baseURL(address: string): string;
  client(options: {
    baseURL: string;
    apiKey: string;
    maxRetries: 0;
    defaultHeaders: Record<string, string>;
  }): Client;
}

/** `POST /v1/chat/completions` through the OpenAI SDK. */
export const OPENAI_DROP_IN: DropInProvider<OpenAI> = {
  protocol: 'openai',
  baseURL: (address) => `${address}/v1`,
  client: (options) => new OpenAI(options),
};

export type DropInApi = DropInApiOf<OpenAI>;

export function useDropInApi(options: DropInApiOptions = {}): DropInApi {
  return useDropInApiOf(OPENAI_DROP_IN, options);
}

export function useDropInApiOf<Client>(
  provider: DropInProvider<Client>,
  options: DropInApiOptions = {},
): DropInApiOf<Client> {
  const database = useTestDatabase();
  let state:
    | {
        server: ServerOn;
        baseURL: string;
        upstream: LlmStub;
        recorder: UpstreamRecorder;
        summarizer?: LlmStub;
        workers?: RunningWorkers;
      }
    | undefined;

  beforeAll(async () => {
    const upstream = await startLlmStub(options.upstream);
    const recorder = await startUpstreamRecorder(upstream.url);
    // The Anthropic SDK adds `/v1/messages` to its base URL; the OpenAI SDK `/chat/completions`.
    const upstreamURL = provider.protocol === 'anthropic' ? new URL(recorder.url).origin : recorder.url;
    const server = await buildServerOn(database.db, `dropin-${provider.protocol}`, {
      dropIn: {
        [provider.protocol]: { baseURL: upstreamURL, apiKey: 'stub' },
        upstreamTimeoutMs: 10_000,
        ...options.dropIn,
      },
    });
    const baseURL = provider.baseURL(await server.app.listen({ port: 0, host: '127.0.0.1' }));
    state = { server, baseURL, upstream, recorder };
    if (options.workers) {
      const summarizer = await startLlmStub(options.summarizer);
      const tokenizer = getTokenizer('o200k_base');
      state.summarizer = summarizer;
      state.workers = startWorkers(
        {
          db: database.db,
          llm: createLlm({ apiKey: 'stub', baseURL: summarizer.url, timeoutMs: 20_000 }),
          clock: () => new Date(),
          log: silentLog,
          tokenizerFor: () => tokenizer,
          events: server.replica.publisher,
        },
        {
          connection: { url: inject('redisUrl'), maxRetriesPerRequest: null },
          prefix: server.replica.queues.prefix,
          concurrency: 4,
        },
      );
    }
  });

  afterAll(async () => {
    await state?.workers?.close(10_000);
    await state?.server.close();
    await state?.recorder.close();
    await state?.upstream.close();
    await state?.summarizer?.close();
  });

  const current = () => {
    if (!state) throw new Error('useDropInApi(): it exists only inside tests and hooks');
    return state;
  };
  return {
    database,
    get server() {
      return current().server;
    },
    get baseURL() {
      return current().baseURL;
    },
    get upstream() {
      return current().upstream;
    },
    get recorder() {
      return current().recorder;
    },
    client(headers = {}, key = TENANT_A_KEY) {
      return provider.client({
        baseURL: current().baseURL,
        apiKey: key,
        maxRetries: 0,
        defaultHeaders: headers,
      });
    },
    async history(sessionId) {
      // The answers the client has are stored as it gets them: what it read is stored once these end.
      await answersStored();
      const messages: Message[] = [];
      for (let afterSeq: number | null = 0; afterSeq !== null;) {
        const response = await current().server.request(
          'GET',
          `/v1/sessions/${encodeURIComponent(sessionId)}/messages?limit=1000&afterSeq=${afterSeq}`,
        );
        if (response.statusCode !== 200) throw new Error(`history: ${response.statusCode} ${response.body}`);
        const page = response.json() as { messages: Message[]; nextAfterSeq: number | null };
        messages.push(...page.messages);
        afterSeq = page.nextAfterSeq;
      }
      return messages;
    },
    async sessionIds() {
      await answersStored();
      const { rows } = await database.database.pool.query<{ id: string }>(
        `select id from sessions where tenant_id = 'tenant-a' order by created_at, pk`,
      );
      return rows.map((row) => row.id);
    },
    async rowCounts() {
      await answersStored();
      const { rows } = await database.database.pool.query(
        `select (select count(*) from sessions)::int as sessions, (select count(*) from messages)::int as messages,
                (select count(*) from conversation_links)::int as links`,
      );
      return rows[0] as Record<string, number>;
    },
  };
}
