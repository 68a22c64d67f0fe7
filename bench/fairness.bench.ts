/**
 * One session hammered, another tenant's reads (issue 9, defect 9): 12 concurrent appends of
 * 1,000 messages to tenant A's session, again and again, while tenant B reads its own session's
 * context. Before the per-session write queue, the waiting appends held the API's 10 pooled
 * connections and B's reads took 8–13 s. Measured against B's reads on an idle API in the same
 * run. The API runs as its own process (`npm run api`), as in production.
 * `npm run bench -- fairness`.
 */
import { randomUUID } from 'node:crypto';
import { dropDatabase, freshDatabase, startApiProcess } from './processes';
import { apiHeaders } from './harness';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_fairness';
const READS = 300;
const WRITERS = 12;
const MESSAGES_PER_APPEND = 1_000;

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** `READS` sequential context reads of tenant B's session: p50, p99 and max in ms. */
async function timeReads(api: string): Promise<{ p50: number; p99: number; max: number }> {
  const times: number[] = [];
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    const response = await fetch(`${api}/v1/sessions/quiet/context`, { headers: apiHeaders('key-b') });
    if (response.status !== 200) throw new Error(`tenant B read failed: ${response.status}`);
    await response.arrayBuffer();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), max: times.at(-1)! };
}

function batch(wave: number, writer: number) {
  return Array.from({ length: MESSAGES_PER_APPEND }, (_, i) => ({
    id: `w${wave}-${writer}-${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `step ${i} of writer ${writer}: run the tests and read the log again` }],
  }));
}

await freshDatabase(URL);
const api = await startApiProcess({
  DATABASE_URL: URL,
  API_KEYS: 'tenant-a:key-a,tenant-b:key-b',
  QUEUE_PREFIX: `{bench-fair-${randomUUID().slice(0, 8)}}`,
  LOG_LEVEL: 'warn',
});
try {
  for (const [key, id] of [
    ['key-a', 'hammered'],
    ['key-b', 'quiet'],
  ] as const) {
    const created = await fetch(`${api.url}/v1/sessions`, {
      method: 'POST',
      headers: apiHeaders(key),
      body: JSON.stringify({ id, model: { id: 'gpt-4o' } }),
    });
    if (created.status !== 201) throw new Error(`session ${id}: ${created.status}`);
  }
  await fetch(`${api.url}/v1/sessions/quiet/messages`, {
    method: 'POST',
    headers: apiHeaders('key-b'),
    body: JSON.stringify({ messages: batch(0, 0).slice(0, 40) }),
  });

  const idle = await timeReads(api.url);

  let hammering = true;
  const statuses = new Map<number, number>();
  let appended = 0;
  const writers = Array.from({ length: WRITERS }, async (_, writer) => {
    for (let wave = 1; hammering; wave++) {
      const response = await fetch(`${api.url}/v1/sessions/hammered/messages`, {
        method: 'POST',
        headers: apiHeaders('key-a'),
        body: JSON.stringify({ messages: batch(wave, writer) }),
      });
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 201) appended += MESSAGES_PER_APPEND;
    }
  });
  // Let the queue fill before measuring.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const hammered = await timeReads(api.url);
  hammering = false;
  await Promise.all(writers);

  const row = (label: string, r: { p50: number; p99: number; max: number }) =>
    console.log(
      `${label.padEnd(52)} p50 ${r.p50.toFixed(1).padStart(7)} ms   p99 ${r.p99.toFixed(1).padStart(7)} ms   max ${r.max.toFixed(1).padStart(7)} ms`,
    );
  row(`tenant B context reads, API idle (${READS})`, idle);
  row(`… while ${WRITERS} writers append ${MESSAGES_PER_APPEND}-message batches to A`, hammered);
  console.log(
    `appends during the run: ${[...statuses].map(([status, n]) => `${n} × ${status}`).join(', ')}; ${appended} messages stored`,
  );
  console.log(
    `p99 hammered / idle: ${(hammered.p99 / idle.p99).toFixed(1)}× (before the write queue: 8–13 s)`,
  );
} finally {
  await api.stop();
  await dropDatabase(URL);
}
