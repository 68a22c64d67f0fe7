/**
 * What the context memo's loop test (routes/dropin-context-memo.test.ts) stands on: a proxy in
 * front of the stub that reads the truth (a context read keeping nothing) as each upstream
 * request arrives, and workers of the file's own that pause during each drop-in call.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, inject } from 'vitest';
import { toAnthropicMessages, type Message } from '@compactor/core';
import { createLlm } from '@compactor/llm';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { startWorkers, type RunningWorkers } from '@compactor/queue';
import { sessionContext } from '@compactor/sessions';
import { getTokenizer } from '@compactor/tokenizer';
import { silentLog } from '@compactor/workflow';
import type { DropInApiOf } from './dropin-api';

/** The tenant the test's keys belong to (TENANT_A_KEY). */
export const TENANT = 'tenant-a';

/** A served context and the truth read at the moment it was sent upstream, as JSON. */
export interface Compared {
  session: string;
  served: string;
  truth: string;
}

/**
 * A pass-through in front of the stub that reads the truth (a context read keeping nothing)
 * before it forwards the request: the API waits for the upstream, so nothing has moved since
 * it read its own.
 */
export function useTruthProxy(protocol: 'openai' | 'anthropic', api: () => DropInApiOf<unknown>) {
  const compared: Compared[] = [];
  let server: http.Server | undefined;
  let url = '';
  const truthOf = async (session: string, format: 'native' | 'openai'): Promise<unknown[]> => {
    const { db } = api().database;
    const answer = await sessionContext(
      { db, tokenizerFor: () => getTokenizer('o200k_base'), events: noEvents },
      { tenantId: TENANT, id: session },
      { format, fit: 'auto', waitMs: 0 },
      {},
      null,
    );
    return answer.messages;
  };
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        void (async () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const body = JSON.parse(text) as { messages: unknown[]; system?: unknown };
          const session = String(req.headers['x-test-session'] ?? current.session);
          const truth = await truthOf(session, protocol === 'openai' ? 'openai' : 'native');
          if (protocol === 'openai') {
            compared.push({ session, served: JSON.stringify(body.messages), truth: JSON.stringify(truth) });
          } else {
            const rendered = toAnthropicMessages({ messages: truth as Message[] });
            compared.push({
              session,
              // The gateway marks prompt-cache breakpoints on the rendered context (core
              // withCacheBreakpoints): not the context's own content, so left out of both.
              served: JSON.stringify([body.system, body.messages], (key, value: unknown) =>
                key === 'cache_control' ? undefined : value,
              ),
              truth: JSON.stringify([rendered.system, rendered.messages]),
            });
          }
          const headers = Object.fromEntries(
            Object.entries(req.headers).flatMap(([name, value]) =>
              typeof value === 'string' && name !== 'host' && name !== 'content-length'
                ? [[name, value]]
                : [],
            ),
          );
          const upstream = await fetch(`${new URL(api().upstream.url).origin}${req.url}`, {
            method: req.method,
            headers,
            body: text,
          });
          res.writeHead(upstream.status, Object.fromEntries(upstream.headers));
          res.end(Buffer.from(await upstream.arrayBuffer()));
        })().catch((error: unknown) => {
          res.writeHead(500).end(String(error));
        });
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${protocol === 'openai' ? '/v1' : ''}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });
  const current = { session: '' };
  return {
    compared,
    current,
    get url() {
      return url;
    },
  };
}

export const noEvents = {
  publish: async () => undefined,
  subscribe: async () => ({ close: async () => undefined }),
} as never;

/** Workers of the file's own (paused during each drop-in call), on a summarizer stub. */
export function usePausableWorkers(api: () => DropInApiOf<unknown>) {
  let workers: RunningWorkers | undefined;
  let summarizer: LlmStub | undefined;
  beforeAll(async () => {
    summarizer = await startLlmStub();
    const tokenizer = getTokenizer('o200k_base');
    workers = startWorkers(
      {
        db: api().database.db,
        llm: createLlm({ apiKey: 'stub', baseURL: summarizer.url, timeoutMs: 20_000 }),
        clock: () => new Date(),
        log: silentLog,
        tokenizerFor: () => tokenizer,
        events: api().server.replica.publisher,
      },
      {
        connection: { url: inject('redisUrl'), maxRetriesPerRequest: null },
        prefix: api().server.replica.queues.prefix,
        concurrency: 2,
      },
    );
  });
  afterAll(async () => {
    await workers?.close(10_000);
    await summarizer?.close();
  });
  return {
    pause: async () => {
      await Promise.all(workers!.workers.map((worker) => worker.pause()));
    },
    resume: () => {
      for (const worker of workers!.workers) worker.resume();
    },
    idle: () => workers!.active() === 0 && workers!.queued() === 0,
  };
}
