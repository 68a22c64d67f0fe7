/**
 * What the drop-in endpoint adds to a model call: `POST /v1/chat/completions` through Compactor
 * against the same call straight to the upstream, the LLM stub at zero latency, through the
 * official `openai` SDK, whole and streamed. Each sample is an agent's next turn: a conversation
 * whose client history already holds N messages (100, 1,000, 10,000; a tool-using coding agent),
 * all stored, so the request extends the stored chain by the newest one or two messages; the
 * same request goes to the stub directly in the same round (the baseline, order alternating).
 * Each history is seeded by one drop-in request carrying it whole (an agent switching its base
 * URL mid-conversation), a worker compacts it, and the timing starts once no compaction runs;
 * compactions started by the measured turns themselves run as they would (counted).
 *
 * Then the stored history alone: sessions holding 10,000 messages (appended through the
 * messages API, compacted) and none, each continued by a drop-in conversation of the same
 * bytes under `X-Compactor-Session`: the overhead should follow the request, not the store.
 *
 * The API and the worker are processes of their own; the upstream stub runs in this process (its
 * records give the served context's size), the summarizer's stub in a process. The load average
 * is printed with each phase. `npm run bench -- dropin`; BENCH_DROPIN_SAMPLES (turns per mode and
 * size, default 100), BENCH_DROPIN_SIZES (default 100,1000,10000), BENCH_DROPIN_STORED=0 (leaves
 * out the stored-history comparison), BENCH_DATABASE_URL,
 * BENCH_REDIS_URL; BENCH_DROPIN_SPANS=1 breaks the API's time down (bench/dropin/spans.ts), with
 * BENCH_DROPIN_CPU_PROFILE_DIR also a CPU profile of each size's measured turns.
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import OpenAI from 'openai';
import pg from 'pg';
import { startLlmStub, type RecordedRequest } from '@compactor/llm-stub';
import { deleteQueueKeys } from '@compactor/stack';
import { brokenDown, spansEnv } from './dropin/breakdown';
import { AgentConversation, callModel, storedHistoryBatch } from './dropin/conversation';
import { apiHeaders, spread, type Spread } from './harness';
import {
  dropDatabase,
  freshDatabase,
  startApiProcess,
  startStubProcess,
  startWorkerProcess,
} from './processes';
import { Goals } from './scale/report';

const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_dropin';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SAMPLES = Number(process.env.BENCH_DROPIN_SAMPLES ?? 100);
const SIZES = (process.env.BENCH_DROPIN_SIZES ?? '100,1000,10000').split(',').map(Number);
const KEY = 'key-bench';
/** The stored-history comparison: messages stored before the drop-in conversation starts. */
const STORED = 10_000;
/** Its drop-in conversations' length when they start (equal bytes on both sides). */
const STORED_REQUEST = 100;
const GOAL_P50_MS = 15;

/**
 * Conversations per size: each sample takes the next turn of one, round robin, so that a size's
 * samples grow its histories by a few percent at most (two messages a turn).
 */
const conversationsFor = (size: number) => Math.max(2, Math.ceil((2 * SAMPLES * 2) / (size * 0.05)));

await freshDatabase(DATABASE_URL);
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
const prefix = `{bench-dropin-${randomUUID().slice(0, 8)}}`;
const upstream = await startLlmStub();
const summarizer = await startStubProcess();
const env = { DATABASE_URL, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' };
const worker = await startWorkerProcess({ ...env, OPENAI_BASE_URL: summarizer.url, OPENAI_API_KEY: 'stub' });
const api = await startApiProcess({
  ...env,
  // BENCH_DROPIN_SPANS=1: the API times its statements and upstream calls (bench/dropin/spans.ts).
  ...spansEnv(),
  API_KEYS: `bench:${KEY}`,
  UPSTREAM_OPENAI_BASE_URL: upstream.url,
  UPSTREAM_OPENAI_API_KEY: 'stub',
});
const goals = new Goals();

const direct = new OpenAI({ baseURL: upstream.url, apiKey: 'stub', maxRetries: 0 });
const viaCompactor = (session: string) =>
  new OpenAI({
    baseURL: `${api.url}/v1`,
    apiKey: KEY,
    maxRetries: 0,
    defaultHeaders: { 'X-Compactor-Session': session },
  });

/** The served context's size: prompt tokens of the upstream requests Compactor sent, per phase. */
let compactorPrompts: number[] = [];
let viaCompactorNow = false;
upstream.events.on('request', (record: RecordedRequest) => {
  if (viaCompactorNow) compactorPrompts.push(record.promptTokens);
  // The records would keep every request's messages (gigabytes at 10,000 messages a request).
  (upstream.requests as RecordedRequest[]).length = 0;
});

interface Agent {
  conversation: AgentConversation;
  client: OpenAI;
  session: string;
}

async function sessionStatus(id: string): Promise<{ activeCompaction: unknown; contextMessages: number }> {
  const response = await fetch(`${api.url}/v1/sessions/${encodeURIComponent(id)}`, {
    headers: apiHeaders(KEY),
  });
  if (!response.ok) throw new Error(`session ${id}: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { status: { activeCompaction: unknown; contextMessages: number } })
    .status;
}

/** Waits until none of the sessions has a compaction pending or running (the worker's events decide). */
async function compactionsSettled(sessions: readonly string[]): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (const id of sessions) {
    while ((await sessionStatus(id)).activeCompaction !== null) {
      if (Date.now() > deadline) throw new Error(`session ${id}: a compaction still runs after 10 minutes`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

async function compactionCount(): Promise<number> {
  return Number((await pool.query<{ n: string }>(`select count(*) as n from compactions`)).rows[0]!.n);
}

/** One turn through Compactor: its milliseconds, the conversation advanced by its answer. */
async function turnViaCompactor(agent: Agent, stream: boolean): Promise<number> {
  viaCompactorNow = true;
  const started = performance.now();
  const message = await callModel(agent.client, agent.conversation, stream);
  const ms = performance.now() - started;
  viaCompactorNow = false;
  agent.conversation.answered(message);
  return ms;
}

/** The same request straight to the stub: its milliseconds (the answer is the baseline's own). */
async function turnDirect(agent: Agent, stream: boolean): Promise<number> {
  const started = performance.now();
  await callModel(direct, agent.conversation, stream);
  return performance.now() - started;
}

/** Starts `count` conversations of `size` messages, each seeded by one drop-in request. */
async function seedAgents(label: string, size: number, count: number): Promise<Agent[]> {
  const agents: Agent[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const session = `bench-${label}-${i}`;
    const agent = {
      conversation: new AgentConversation(`${label}-${String(i).padStart(3, '0')}`, size),
      client: viaCompactor(session),
      session,
    };
    await turnViaCompactor(agent, false);
    agents.push(agent);
  }
  await compactionsSettled(agents.map((a) => a.session));
  console.log(
    `seeded ${count} conversation(s) of ${size} messages through the drop-in route, compacted: ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return agents;
}

interface Measured {
  compactor: Record<'whole' | 'stream', number[]>;
  direct: Record<'whole' | 'stream', number[]>;
}

/** `samples` turns per mode, round robin over the agents, each also sent straight to the stub. */
async function measureTurns(agents: Agent[], samples: number): Promise<Measured> {
  const measured: Measured = { compactor: { whole: [], stream: [] }, direct: { whole: [], stream: [] } };
  for (let i = 0; i < 2 * samples; i++) {
    const agent = agents[i % agents.length]!;
    const mode = i % 2 === 0 ? 'whole' : 'stream';
    const stream = mode === 'stream';
    // Which goes first alternates, so both share whatever the machine does meanwhile.
    const directFirst = Math.floor(i / 2) % 2 === 0;
    if (directFirst) measured.direct[mode].push(await turnDirect(agent, stream));
    measured.compactor[mode].push(await turnViaCompactor(agent, stream));
    if (!directFirst) measured.direct[mode].push(await turnDirect(agent, stream));
  }
  return measured;
}

const f = (ms: number) => `${ms.toFixed(1).padStart(7)} ms`;
const row = (label: string, s: Spread) => `${label.padEnd(34)} p50 ${f(s.p50)}   p99 ${f(s.p99)}   (${s.n})`;
const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);

const overheadAt1k: Partial<Record<'whole' | 'stream', number>> = {};
try {
  for (const size of SIZES) {
    const count = conversationsFor(size);
    const agents = await seedAgents(`n${size}`, size, count);
    const compactionsBefore = await compactionCount();
    compactorPrompts = [];
    const load = loadavg()[0]!;
    const bytes = Buffer.byteLength(JSON.stringify(agents[0]!.conversation.body()));
    // Warm-up, outside the breakdown: each conversation's first extending turn (JIT, statement
    // plans, connections, the modules a turn loads on first use).
    for (const agent of agents) await turnViaCompactor(agent, false);
    const { result: measured, lines } = await brokenDown(api.process, () => measureTurns(agents, SAMPLES));
    console.log(
      `\n${size} messages in the client's history (${(bytes / 1024).toFixed(0)} KiB a request; ` +
        `${count} conversations, ${SAMPLES} turns per mode); load ${load.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}; ` +
        `${(await compactionCount()) - compactionsBefore} compaction(s) during the turns; ` +
        `served context ~${mean(compactorPrompts).toFixed(0)} stub tokens`,
    );
    for (const mode of ['whole', 'stream'] as const) {
      const via = spread(measured.compactor[mode]);
      const base = spread(measured.direct[mode]);
      console.log(row(`  ${mode}: through Compactor`, via));
      console.log(row(`  ${mode}: straight to the stub`, base));
      console.log(
        `  ${mode}: Compactor adds p50 ${f(via.p50 - base.p50)}, p99 ${f(via.p99 - base.p99)}; ` +
          `ratio p50 ${(via.p50 / base.p50).toFixed(2)}×, p99 ${(via.p99 / base.p99).toFixed(2)}×`,
      );
      if (size === 1000) overheadAt1k[mode] = via.p50 - base.p50;
    }
    for (const line of lines) console.log(line);
  }
  for (const mode of ['whole', 'stream'] as const)
    goals.check(
      `p50 overhead at 1,000 messages under ${GOAL_P50_MS} ms (${mode})`,
      overheadAt1k[mode],
      (v) => v < GOAL_P50_MS,
      `${overheadAt1k[mode]?.toFixed(1)} ms`,
    );

  // BENCH_DROPIN_STORED=0 leaves out the stored-history comparison.
  if (process.env.BENCH_DROPIN_STORED !== '0') await storedHistoryAlone();
} finally {
  await api.stop();
  await worker.stop();
  await summarizer.stop();
  await upstream.close();
  await pool.end();
  await deleteQueueKeys(REDIS_URL, prefix);
  await dropDatabase(DATABASE_URL);
}
goals.summarize();

/**
 * The same requests against a session that stores 10,000 messages more and one that stores none
 * beyond them: the stored history must not show in the time.
 */
async function storedHistoryAlone(): Promise<void> {
  const big = 'bench-stored-big';
  const created = await fetch(`${api.url}/v1/sessions`, {
    method: 'POST',
    headers: apiHeaders(KEY),
    body: JSON.stringify({ id: big, model: { id: 'gpt-4o' } }),
  });
  if (created.status !== 201) throw new Error(`create ${big}: ${created.status}`);
  const started = performance.now();
  for (let from = 0; from < STORED; from += 1000) await appendStored(big, from, 1000);
  const agents: Agent[] = [
    {
      conversation: new AgentConversation('stored-big', STORED_REQUEST),
      client: viaCompactor(big),
      session: big,
    },
    {
      conversation: new AgentConversation('stored-sml', STORED_REQUEST),
      client: viaCompactor('bench-stored-none'),
      session: 'bench-stored-none',
    },
  ];
  for (const agent of agents) await turnViaCompactor(agent, false);
  await compactionsSettled(agents.map((a) => a.session));
  console.log(
    `\nstored history alone: ${STORED} messages appended to ${big} and compacted, ` +
      `then both sessions continued by ${STORED_REQUEST}-message drop-in conversations: ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const times: number[][] = [[], []];
  const prompts: number[][] = [[], []];
  const load = loadavg()[0]!;
  for (const agent of agents) await turnViaCompactor(agent, false);
  for (let i = 0; i < 2 * SAMPLES; i++) {
    // Alternating which goes first: both share whatever the machine does meanwhile.
    for (const which of i % 2 === 0 ? [0, 1] : [1, 0]) {
      compactorPrompts = [];
      times[which]!.push(await turnViaCompactor(agents[which]!, false));
      prompts[which]!.push(...compactorPrompts);
    }
  }
  const [withStored, without] = [spread(times[0]!), spread(times[1]!)];
  const stored = await sessionStatus(big);
  console.log(
    `equal requests (${STORED_REQUEST}→${agents[0]!.conversation.messages.length} messages), whole; load ${load.toFixed(1)}`,
  );
  console.log(
    row(`  ${STORED} stored before`, withStored) +
      `   served ~${mean(prompts[0]!).toFixed(0)} stub tokens, ${stored.contextMessages} messages in view`,
  );
  console.log(
    row('  nothing stored before', without) + `   served ~${mean(prompts[1]!).toFixed(0)} stub tokens`,
  );
  goals.check(
    `p50 with ${STORED} stored within 1.5× of none stored (equal requests)`,
    withStored.p50 / without.p50,
    (v) => v <= 1.5,
    `${(withStored.p50 / without.p50).toFixed(2)}× (${withStored.p50.toFixed(1)} / ${without.p50.toFixed(1)} ms)`,
  );
}

/** `count` messages of a tool-using history appended to a session through the messages API. */
async function appendStored(session: string, from: number, count: number): Promise<void> {
  const messages = storedHistoryBatch(from, count);
  const response = await fetch(`${api.url}/v1/sessions/${session}/messages`, {
    method: 'POST',
    headers: apiHeaders(KEY),
    body: JSON.stringify({ messages }),
  });
  if (response.status !== 201)
    throw new Error(`append to ${session}: ${response.status} ${await response.text()}`);
}
