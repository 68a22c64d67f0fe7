import type fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { TENANT_A_KEY, type TestApi } from './api';
import type { WireBody } from './fuzz';

/** How many times the default case counts run (`FUZZ_RUNS`), and the fixed seed (`FUZZ_SEED`). */
export const FUZZ_RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 1));
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20_261_124);

/** fast-check parameters: the fixed seed, `numRuns` scaled by `FUZZ_RUNS`. */
export const fuzzParams = (numRuns: number): fc.Parameters<unknown> => ({
  seed: FUZZ_SEED,
  numRuns: Math.round(numRuns * FUZZ_RUNS),
});

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** One request as the fuzz suite sends it: a wire body may carry its own content type. */
export interface Call {
  method: Method;
  url: string;
  wire?: WireBody;
  key?: string | null;
  headers?: Record<string, string>;
}

export const isOk = (response: LightMyRequestResponse) =>
  response.statusCode >= 200 && response.statusCode < 300;

/**
 * Sends the fuzz suite's requests and checks the properties every response must hold, counting
 * status classes overall and per route group for the summary printed at the end.
 */
export function fuzzHarness(api: TestApi) {
  /** Requests sent, by status class, for the summary (overall and by route group). */
  const stats = { requests: 0, cases: 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
  const byGroup: Record<string, Record<string, number>> = {};
  let group = 'setup';

  async function send({ method, url, wire = {}, key = TENANT_A_KEY, headers = {} }: Call) {
    const response = await api.request({
      method,
      url,
      key,
      headers: {
        ...headers,
        ...(wire.contentType !== undefined ? { 'content-type': wire.contentType } : {}),
      },
      ...(wire.payload !== undefined ? { payload: wire.payload } : {}),
    });
    stats.requests += 1;
    const kind = `${Math.floor(response.statusCode / 100)}xx` as keyof typeof stats;
    if (kind in stats) stats[kind] += 1;
    const counts = (byGroup[group] ??= {});
    counts[kind] = (counts[kind] ?? 0) + 1;
    return response;
  }

  /** Properties 1 and 2: no 5xx, a well-formed 4xx, and (for a write) a 4xx writes nothing. */
  async function check(call: Call, write = call.method !== 'GET'): Promise<LightMyRequestResponse> {
    stats.cases += 1;
    const before = write ? await api.counts() : undefined;
    const response = await send(call);
    const where = `${call.method} ${call.url.slice(0, 300)} → ${response.statusCode} ${response.body.slice(0, 500)}`;
    expect(response.statusCode, where).toBeLessThan(500);
    if (response.statusCode >= 400) {
      expect(response.json(), where).toMatchObject({
        error: { code: expect.any(String), message: expect.any(String) },
      });
      if (before) expect(await api.counts(), where).toEqual(before);
    }
    return response;
  }

  return {
    stats,
    send,
    check,
    /** Names the route group the following requests count under. */
    inGroup(name: string) {
      group = name;
    },
    report() {
      console.log(`fuzz (seed ${FUZZ_SEED}, FUZZ_RUNS=${FUZZ_RUNS}): ${JSON.stringify(stats)}`);
      for (const [name, counts] of Object.entries(byGroup))
        console.log(`  ${name}: ${JSON.stringify(counts)}`);
    },
  };
}
