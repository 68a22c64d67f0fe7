/**
 * One tenant's flood, another tenant's appends: tenant A runs `FLOOD_WRITERS` concurrent append
 * loops over `FLOOD_SESSIONS` sessions of its own and asks for a compaction every
 * `COMPACTION_EVERY_MS` (a worker process compacts them against the LLM stub), while tenant B
 * appends to its own session, one request at a time. B's append latency under the flood is
 * measured against the same loop on the idle API in the same run (the ratio of the p99s; the goal
 * is at most 2×). The API and the worker run as their own processes, with the API's default pool
 * (`DATABASE_POOL_SIZE` 10) and turns (`TENANT_REQUESTS_IN_FLIGHT` 2), as deployed;
 * `BENCH_TENANT_REQUESTS_IN_FLIGHT` sets another number of turns (0: none, every request at
 * once), `BENCH_TENANT_YIELD_MS` how long A yields to B's running request (`TENANT_YIELD_MS`,
 * default 200; 0: never), and `BENCH_BLOCKS=6` alternates idle and flooded blocks of B's appends
 * (the ratio on a machine whose load drifts). A's flood runs in a process of its own and its writers wait out a 429's Retry-After, as
 * the clients do. With each phase it prints the load average, how busy the machine's cores were,
 * the cores the API, the worker and Postgres used and both event loops' delay: a loaded machine
 * inflates both phases; with blocks, the checkpoints the server completed and the connections the
 * API's pool opened during each kind.
 * `npm run bench -- tenant-flood`.
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { deleteQueueKeys } from '@compactor/stack';
import {
  cpuSecondsOf,
  postgresCpuSeconds,
  dropDatabase,
  freshDatabase,
  startApiProcess,
  startStubProcess,
  startWorkerProcess,
} from './processes';
import { apiLoopDelay as loopDelay, spread } from './harness';
import { apiConnectionsSince, checkpointsSoFar, machineCpu, serverNow } from './tenant-flood/counters';
import {
  COMPACTION_EVERY_MS,
  FLOOD_BATCH,
  FLOOD_CHILD,
  FLOOD_SESSIONS,
  FLOOD_WRITERS,
  floodProcess as floodProcessOf,
  messages,
  post,
  runFloodChild,
} from './tenant-flood/flood';

/** A scratch database of this run's own (the Postgres may be shared), dropped at the end. */
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ??
  `postgres://postgres@127.0.0.1:5432/compactor_bench_tenant_flood_${randomUUID().slice(0, 8)}`;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const B_APPENDS = Number(process.env.BENCH_B_APPENDS ?? 300);
/** B's pause between two appends: a steady trickle, not a flood of its own. */
const B_PAUSE_MS = 10;
const IN_FLIGHT = process.env.BENCH_TENANT_REQUESTS_IN_FLIGHT;
const YIELD_MS = process.env.BENCH_TENANT_YIELD_MS;
/** How long A's flood runs alone before B's appends, its appends counted over the last of it. */
const ALONE_MS = Number(process.env.BENCH_ALONE_MS ?? 5_000);
/** More than 1: B's idle and flooded appends in that many alternating blocks (see {@link alternating}). */
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 1);

/** A's flood in a process of its own, forked from this script (see {@link runFloodChild}). */
const floodProcess = (api: string) => floodProcessOf(fileURLToPath(import.meta.url), api);

async function createSession(api: string, key: string, id: string): Promise<void> {
  const status = await post(api, key, '/v1/sessions', { id, model: { id: 'gpt-4o' } });
  if (status !== 201) throw new Error(`session ${id}: ${status}`);
}

let bAppend = 0;
/** B's `count` appends of two messages, one after another: each one's latency in ms. */
async function timeAppendsOfB(api: string, count = B_APPENDS): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const status = await post(api, 'key-b', '/v1/sessions/quiet/messages', {
      messages: messages(`b${bAppend++}`, 2),
    });
    if (status !== 201) throw new Error(`tenant B's append failed: ${status}`);
    times.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, B_PAUSE_MS));
  }
  return times;
}

/**
 * B's appends, with the API's event-loop delay and the CPU (in cores) its process used meanwhile,
 * the event-loop delay of B's own process (what of B's time is the client's, not the API's), the
 * cores the worker and every Postgres process used, and how busy the machine's cores were.
 */
async function measured(api: { url: string; process: { pid?: number } }, workerPid: number) {
  const pid = api.process.pid!;
  await loopDelay(api.url);
  const client = monitorEventLoopDelay({ resolution: 10 });
  client.enable();
  const before = { api: cpuSecondsOf(pid), worker: cpuSecondsOf(workerPid), pg: postgresCpuSeconds() };
  const [machineBefore, started] = [machineCpu(), performance.now()];
  const times = await timeAppendsOfB(api.url);
  const seconds = (performance.now() - started) / 1000;
  const machineAfter = machineCpu();
  const cores = (cpuSecondsOf(pid) - before.api) / seconds;
  const workerCores = (cpuSecondsOf(workerPid) - before.worker) / seconds;
  const postgresCores = (postgresCpuSeconds() - before.pg) / seconds;
  const machineBusy = (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total);
  client.disable();
  const clientDelay = { p99: client.percentile(99) / 1e6, max: client.max / 1e6 };
  return {
    spread: spread(times),
    delay: await loopDelay(api.url),
    cores,
    clientDelay,
    workerCores,
    postgresCores,
    machineBusy,
  };
}

/**
 * B's appends in `BLOCKS` idle blocks alternating with as many during A's flood (paused, its sent
 * requests answered, for each idle block; resumed 1 s before each flood block): on a shared machine
 * whose load drifts over minutes, both sides of the ratio then see the same load.
 */
async function alternating(api: string, flood: ReturnType<typeof floodProcess>, aloneRate: number) {
  const perBlock = Math.ceil(B_APPENDS / BLOCKS);
  const idle: number[] = [];
  const flooded: number[] = [];
  const loads: number[] = [];
  let [stored, seconds] = [0, 0];
  const checkpoints = { idle: 0, flooded: 0 };
  const opened = { idle: 0, flooded: 0 };
  const server = new pg.Client({ connectionString: DATABASE_URL, application_name: 'bench-tenant-flood' });
  await server.connect();
  try {
    for (let block = 0; block < BLOCKS; block++) {
      await flood.pause();
      loads.push(loadavg()[0]!);
      let [before, since] = [await checkpointsSoFar(server), await serverNow(server)];
      idle.push(...(await timeAppendsOfB(api, perBlock)));
      checkpoints.idle += (await checkpointsSoFar(server)) - before;
      opened.idle += await apiConnectionsSince(server, since);
      await flood.resume();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const from = { stored: await flood.stored(), at: performance.now() };
      [before, since] = [await checkpointsSoFar(server), await serverNow(server)];
      flooded.push(...(await timeAppendsOfB(api, perBlock)));
      checkpoints.flooded += (await checkpointsSoFar(server)) - before;
      opened.flooded += await apiConnectionsSince(server, since);
      stored += (await flood.stored()) - from.stored;
      seconds += (performance.now() - from.at) / 1000;
    }
  } finally {
    await server.end();
  }
  const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;
  const row = (label: string, times: number[]) => {
    const r = spread(times);
    console.log(
      `${label.padEnd(18)} p50 ${ms(r.p50)}   p95 ${ms(r.p95)}   p99 ${ms(r.p99)}   max ${ms(r.max)}`,
    );
    return r;
  };
  console.log(
    `tenant B's appends (2 messages, ${BLOCKS} blocks of ${perBlock} idle alternating with ${BLOCKS} during A's flood); ` +
      `A: ${FLOOD_WRITERS} concurrent ${FLOOD_BATCH}-message appends, a compaction every ${COMPACTION_EVERY_MS} ms; ` +
      `turns per tenant: ${IN_FLIGHT ?? 'the default (2)'}; yield: ${YIELD_MS ?? 'the default'} ms`,
  );
  const [a, b] = [row('API idle', idle), row("during A's flood", flooded)];
  const rate = stored / seconds;
  console.log(
    `A's appends stored a second: ${aloneRate.toFixed(0)} alone, ${rate.toFixed(0)} beside B's (${(rate / aloneRate).toFixed(2)}×)`,
  );
  console.log(
    `p99 flooded / idle: ${(b.p99 / a.p99).toFixed(2)}× (goal ≤ 2×); p95 ${(b.p95 / a.p95).toFixed(2)}×; ` +
      `p50 ${(b.p50 / a.p50).toFixed(2)}×; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
  );
  console.log(
    `checkpoints the server completed during B's idle blocks: ${checkpoints.idle}, during its flooded blocks: ` +
      `${checkpoints.flooded} (each slows the commits after it: another database's CREATE or DROP on a shared server, or the WAL reaching max_wal_size)`,
  );
  console.log(
    `the API's pool opened ${opened.idle} connections during B's idle blocks, ${opened.flooded} during its flooded blocks ` +
      `(still open at the block's end; a request that opens one pays the open and a new backend's first statements)`,
  );
}

async function benchmark(): Promise<void> {
  await freshDatabase(DATABASE_URL);
  const prefix = `{bench-tenant-flood-${randomUUID().slice(0, 8)}}`;
  const stub = await startStubProcess({ LLM_STUB_LATENCY_MS: '200' });
  const env = { DATABASE_URL, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' };
  const worker = await startWorkerProcess({ ...env, OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: 'stub' });
  const api = await startApiProcess({
    ...env,
    API_KEYS: 'tenant-a:key-a,tenant-b:key-b',
    // A's compactions all run: the flood loads the workers too, not only the API.
    TENANT_MAX_ACTIVE_COMPACTIONS: '0',
    ...(IN_FLIGHT === undefined ? {} : { TENANT_REQUESTS_IN_FLIGHT: IN_FLIGHT }),
    ...(YIELD_MS === undefined ? {} : { TENANT_YIELD_MS: YIELD_MS }),
  });
  try {
    await createSession(api.url, 'key-b', 'quiet');
    for (let s = 0; s < FLOOD_SESSIONS; s++) await createSession(api.url, 'key-a', `a${s}`);
    // Warm-up: the API's first appends pay for its JIT and its connections.
    for (let s = 0; s < FLOOD_SESSIONS; s++)
      await post(api.url, 'key-a', `/v1/sessions/a${s}/messages`, {
        messages: messages(`warm${s}`, FLOOD_BATCH),
      });

    const loadIdle = loadavg()[0]!;
    const idle = await measured(api, worker.process.pid!);
    const flood = floodProcess(api.url);
    // Let A's requests fill the pool and the queues before measuring, then count A's appends alone.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const aloneFrom = { stored: await flood.stored(), at: performance.now() };
    await new Promise((resolve) => setTimeout(resolve, ALONE_MS));
    const aloneTo = { stored: await flood.stored(), at: performance.now() };
    const aloneRate = (aloneTo.stored - aloneFrom.stored) / ((aloneTo.at - aloneFrom.at) / 1000);
    if (BLOCKS > 1) {
      await alternating(api.url, flood, aloneRate);
      await flood.stop();
      return;
    }
    const loadFlood = loadavg()[0]!;
    const flooded = await measured(api, worker.process.pid!);
    const withB = { stored: await flood.stored(), at: performance.now() };
    const withBRate = (withB.stored - aloneTo.stored) / ((withB.at - aloneTo.at) / 1000);
    const { statuses, seconds } = await flood.stop();

    const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;
    const row = (label: string, r: Awaited<ReturnType<typeof measured>>, load: number) =>
      console.log(
        `${label.padEnd(18)} p50 ${ms(r.spread.p50)}   p95 ${ms(r.spread.p95)}   p99 ${ms(r.spread.p99)}   ` +
          `max ${ms(r.spread.max)}   load ${load.toFixed(1)}   API event-loop delay p99 ${r.delay.p99.toFixed(0)} ms, ` +
          `max ${r.delay.max.toFixed(0)} ms; API CPU ${r.cores.toFixed(2)} cores; ` +
          `B's own event-loop delay p99 ${r.clientDelay.p99.toFixed(0)} ms; worker ${r.workerCores.toFixed(2)}, ` +
          `every Postgres process ${r.postgresCores.toFixed(2)} cores; machine's cores ${(r.machineBusy * 100).toFixed(0)} % busy`,
      );
    console.log(
      `tenant B's appends (2 messages, ${B_APPENDS} one after another, ${B_PAUSE_MS} ms apart); ` +
        `A: ${FLOOD_WRITERS} concurrent ${FLOOD_BATCH}-message appends over ${FLOOD_SESSIONS} sessions, ` +
        `a compaction every ${COMPACTION_EVERY_MS} ms (1 worker, stub 200 ms); ` +
        `turns per tenant: ${IN_FLIGHT ?? 'the default (2)'}; yield: ${YIELD_MS ?? 'the default'} ms`,
    );
    row('API idle', idle, loadIdle);
    row("during A's flood", flooded, loadFlood);
    console.log(
      `A's requests during the run (${seconds.toFixed(1)} s, ${((statuses.get('append 201') ?? 0) / seconds).toFixed(0)} appends stored a second): ` +
        [...statuses].map(([what, n]) => `${n} × ${what}`).join(', '),
    );
    console.log(
      `A's appends stored a second: ${aloneRate.toFixed(0)} alone (${ALONE_MS / 1000} s before B's appends), ` +
        `${withBRate.toFixed(0)} beside B's (${(withBRate / aloneRate).toFixed(2)}×)`,
    );
    console.log(
      `p99 flooded / idle: ${(flooded.spread.p99 / idle.spread.p99).toFixed(2)}× (goal ≤ 2×); ` +
        `p95 ${(flooded.spread.p95 / idle.spread.p95).toFixed(2)}×; load average now ${loadavg()[0]!.toFixed(1)}`,
    );
  } finally {
    await api.stop();
    await worker.stop();
    await stub.stop();
    await deleteQueueKeys(REDIS_URL, prefix);
    await dropDatabase(DATABASE_URL);
  }
}

if (process.argv[2] === FLOOD_CHILD) runFloodChild(process.argv[3]!);
else await benchmark();
