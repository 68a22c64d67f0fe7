/**
 * `npm run demo` (`bash scripts/demo.sh`): the real system, end to end, in about ten seconds.
 *
 * 1. checks Postgres and Redis (DATABASE_URL / REDIS_URL or the local defaults) and says how to
 *    start the one that is missing;
 * 2. starts the API, worker processes and the LLM stub as child processes (`node --import tsx`),
 *    on free ports, with a fresh scratch database and queue prefix of the run's own (dropped when it
 *    ends; `--database` / `--queue-prefix` name kept ones); a real provider (OPENAI_API_KEY /
 *    OPENAI_BASE_URL) replaces the stub;
 * 3. creates a session with a 32k window, follows its event stream (SSE), and appends a coding
 *    agent's session one message at a time over HTTP until auto-compaction fires and runs through
 *    the queue on the workers;
 * 4. prints the compaction, the new context and its checks (valid OpenAI rendering, facts kept).
 *
 * Every child is stopped on exit, error or Ctrl-C. `--help` lists the options.
 */
import { CompactorApiError, type SessionEventMessage } from '@compactor/client';
import type { Policy } from '@compactor/core';
import { NotScratchDatabaseError, redactUrl, type MessageInput } from '@compactor/db';
import {
  checkPostgres,
  checkRedis,
  Children,
  deleteQueueKeys,
  dropDatabase,
  followEvents,
  recreateScratchDatabase,
  ServiceMissingError,
  startStack,
  withDatabase,
  type ChildLogLine,
} from '@compactor/stack';
import { parseOptions, USAGE, UsageError, type DemoOptions } from './demo/options';
import { bar, bold, cyan, describePolicy, dim, n, progress, red, section, yellow } from './demo/print';
import { printReport } from './demo/report';

const API_KEY = 'demo-key';
const CONTEXT_WINDOW = 32_000;
const MAX_OUTPUT_TOKENS = 4_000;
const TERMINAL = new Set(['completed', 'failed', 'skipped']);

const children = new Children(process.env, showChildLog);

function showChildLog({ child, level, msg, fields }: ChildLogLine): void {
  const detail = Object.entries(fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const label = level >= 50 ? red('error') : yellow('warn');
  progress(`${label} ${child}: ${msg}${detail ? dim(`  ${detail}`.slice(0, 160)) : ''}`);
}

/** Starts the stub (unless a real provider is configured), the API, then the workers. */
function startProcesses(options: DemoOptions, databaseUrl: string) {
  return startStack(children, {
    databaseUrl,
    redisUrl: options.redisUrl,
    queuePrefix: options.placement.queuePrefix,
    apiKey: API_KEY,
    workers: options.workers,
    provider: options.provider,
  });
}

/** What a message is, in a few words: the user's request, or the tools an assistant step called. */
function gist(message: MessageInput): string {
  const tools = message.parts.flatMap((p) => (p.type === 'tool' ? [p.tool] : []));
  if (tools.length > 0) {
    const counts = new Map<string, number>();
    for (const tool of tools) counts.set(tool, (counts.get(tool) ?? 0) + 1);
    return [...counts].map(([tool, count]) => (count > 1 ? `${tool} ×${count}` : tool)).join(', ');
  }
  const text = message.parts
    .map((p) => (p.type === 'text' ? p.text : ''))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  const quoted = message.role === 'user' ? `"${text}` : text;
  return quoted.length > 30 ? `${quoted.slice(0, 29)}…` : quoted;
}

function describeEvent(event: SessionEventMessage): string {
  switch (event.type) {
    case 'compaction.requested':
      return `${event.data.reason}, strategy ${event.data.strategy}`;
    case 'compaction.started':
      return `attempt ${event.data.attempt} (${event.data.reason})`;
    case 'compaction.step':
      return `${event.data.step} (attempt ${event.data.attempt})`;
    case 'compaction.completed':
    case 'session.compacted': {
      const d = event.data;
      return `${n(d.tokensBefore)} → ${n(d.tokensAfter)} tokens, ${d.messagesBefore} → ${d.messagesAfter} messages, boundary at seq ${d.boundarySeq}`;
    }
    case 'compaction.failed':
      return `error ${JSON.stringify(event.data.error)}`;
    case 'compaction.skipped':
      return event.data.reason;
    case 'prune.completed':
      return `${event.data.parts} tool outputs, ${n(event.data.tokens)} tokens`;
    default:
      return JSON.stringify(event.data);
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2), process.env);
  const databaseUrl = withDatabase(options.databaseUrl, options.placement.database);

  section('Setup');
  const checks = await Promise.allSettled([
    checkPostgres(options.databaseUrl, process.env.DATABASE_URL !== undefined),
    checkRedis(options.redisUrl, process.env.REDIS_URL !== undefined),
  ]);
  const missing = checks.flatMap((c) => (c.status === 'rejected' ? [c.reason as Error] : []));
  if (missing.length > 0) {
    if (missing.some((e) => !(e instanceof ServiceMissingError))) throw missing[0];
    throw new ServiceMissingError(missing.map((e) => e.message).join('\n\n'));
  }
  const [pgVersion = '?', redisVersion = '?'] = checks.map((c) =>
    c.status === 'fulfilled' ? c.value.split(' ')[0]! : '?',
  );
  // A clean slate: a scratch database (the API migrates it), no earlier run's jobs. Only a
  // database Compactor created is dropped; another of that name is someone else's (refused).
  await Promise.all([
    recreateScratchDatabase(databaseUrl, 'demo'),
    deleteQueueKeys(options.redisUrl, options.placement.queuePrefix),
  ]);
  cleanUp = () => removePerRunPlacement(options, databaseUrl);
  const kept = options.placement.perRun?.database ? 'dropped when the demo ends' : 'kept after the demo';
  console.log(`  Postgres ${pgVersion.padEnd(8)} ${redactUrl(databaseUrl)} ${dim(`(scratch, ${kept})`)}`);
  console.log(
    `  Redis    ${redisVersion.padEnd(8)} ${redactUrl(options.redisUrl)}, queue prefix ${options.placement.queuePrefix}`,
  );

  const started = Date.now();
  const processes = await Promise.race([startProcesses(options, databaseUrl), children.failed()]);
  const { api, apiUrl, client, workers, workerPorts: ports, stub, stubUrl } = processes;
  const cmd = (script: string) => dim(`node --import tsx ${script}`);
  console.log(
    `  API      pid ${String(api.pid).padEnd(7)} ${apiUrl} ${dim(`(docs at ${apiUrl}/docs)`)}  ${cmd('apps/api/src/main.ts')}`,
  );
  workers.forEach((worker, i) =>
    console.log(
      `  worker   pid ${String(worker.pid).padEnd(7)} probes on :${ports[i]}  ${cmd('apps/worker/src/main.ts')}`,
    ),
  );
  if (stub)
    console.log(
      `  LLM stub pid ${String(stub.pid).padEnd(7)} ${stubUrl}  ${cmd('apps/llm-stub/src/main.ts')}`,
    );
  else
    console.log(
      `  LLM      ${options.provider!.baseUrl ?? 'OpenAI'}, model ${options.provider!.model} ${dim('(OPENAI_* from the environment)')}`,
    );
  console.log(dim(`  all up in ${((Date.now() - started) / 1000).toFixed(1)} s`));

  const sessionId = `demo-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}`;
  const modelId = options.provider?.model ?? 'stub-model';
  const created = await client.createSession({
    id: sessionId,
    model: {
      id: modelId,
      provider: 'openai',
      contextWindow: CONTEXT_WINDOW,
      maxOutputTokens: MAX_OUTPUT_TOKENS,
    },
    // OpenCode's prune budgets (protect 40k, prune ≥ 20k) assume 128k+ windows; scaled down to this
    // one. Pruning after each turn holds the session back for a while; then it outgrows the window.
    policy: { pruning: { protectTokens: 12_000, minimumTokens: 6_000 } },
  });
  // The demo's window is finite: the API computes a usable size for it.
  const usable = created.status.usable!;
  section(`Session ${sessionId}`);
  console.log(
    `  model ${modelId}, window ${n(CONTEXT_WINDOW)}: ${n(usable)} usable, ${n(MAX_OUTPUT_TOKENS)} reserved for the reply`,
  );
  for (const line of describePolicy(created.policy, created.effectivePolicy as Policy)) console.log(line);

  // Which compactions this run saw start, and their state as the events tell it.
  const compactions = new Map<string, string>();
  let wake: () => void = () => undefined;
  let prunes = 0;
  /** Resolves once more than `seen` prune jobs have reported, or after `ms`. */
  const pruneAfter = async (seen: number, ms: number) => {
    const deadline = Date.now() + ms;
    while (prunes <= seen && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  const onEvent = (event: SessionEventMessage) => {
    if (event.type === 'prune.completed') prunes++;
    if (event.compactionId) {
      const status =
        event.type === 'compaction.completed'
          ? 'completed'
          : event.type === 'compaction.failed'
            ? 'failed'
            : event.type === 'compaction.skipped'
              ? 'skipped'
              : 'running';
      if (!TERMINAL.has(compactions.get(event.compactionId) ?? ''))
        compactions.set(event.compactionId, status);
    }
    const line = `${event.type.padEnd(21)} ${describeEvent(event)}`;
    // A turn's prune that found nothing old enough is routine: shown, but quietly.
    const quiet = event.type === 'prune.completed' && event.data.parts === 0;
    progress(`     ${quiet ? dim(`▸ ${line}`) : cyan(`▸ ${line}`)}`);
    wake();
  };
  const events = await followEvents(client, sessionId, onEvent);
  // Not fatal (the wait below also polls); not news either when the demo is being stopped.
  void events.ended.then(
    (error) =>
      error &&
      setTimeout(() => interrupted || stopping || progress(red(`event stream ended: ${error.message}`)), 300),
  );
  console.log(
    `  following GET /v1/sessions/${sessionId}/events (SSE): every event below arrives as it happens`,
  );

  section(
    `Agent: ${options.messages.length} messages${options.source ? ` from ${options.source}` : ''}, appended one at a time (POST …/messages)`,
  );
  console.log(dim(`   time   seq  role       what                             next prompt   of usable`));
  const run = async () => {
    for (const stored of options.messages) {
      if (options.paceMs > 0) await new Promise((resolve) => setTimeout(resolve, options.paceMs));
      // An agent's step: fetch the context, call the model with it, store the reply with the usage
      // the model reported. The prompt is the context as it is now, compacted or not (the
      // fixture's own usage counts the whole uncompacted history, which no real client reports).
      let message = stored;
      if (message.role === 'assistant' && message.usage) {
        const prompt = await client.getContext(sessionId);
        message = { ...message, usage: { ...message.usage, input: prompt.tokens } };
      }
      const prunesBefore = prunes;
      const response = await client.appendMessages(sessionId, [message]);
      const { status, compaction } = response;
      const seq = response.messages[0]!.seq;
      const percent = status.percent ?? 0;
      const note = compaction
        ? `  ${bold(`⚡ ${compaction.reason} compaction ${compaction.id.slice(0, 12)}… requested`)}`
        : status.activeCompaction
          ? dim(`  (compaction ${status.activeCompaction.status})`)
          : '';
      if (compaction) compactions.set(compaction.id, compaction.status);
      progress(
        `${String(seq).padStart(4)}  ${message.role.padEnd(9)}  ${gist(message).padEnd(31)}  ${n(status.tokens).padStart(7)} tok ${`${Math.round(percent)} %`.padStart(5)} ${bar(percent)}${note}`,
      );
      // A finished turn queued a prune job (when the context held enough tool output to prune).
      // The next request comes once it has run (as a user's reply would), so every run of the
      // demo takes the same path.
      if (response.prune) await pruneAfter(prunesBefore, 5_000);
    }

    if (compactions.size === 0) {
      progress(yellow('the session never crossed the auto trigger: requesting a manual compaction'));
      const { compaction: manual } = await client.requestCompaction(sessionId);
      compactions.set(manual.id, manual.status);
    }

    // Wait for every compaction to end: the events say so at once; polling the rows is the
    // safety net (an event lost to a broken stream).
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      const open = [...compactions].filter(([, status]) => !TERMINAL.has(status));
      const { status } = await client.getSession(sessionId);
      const active = status.activeCompaction;
      if (active && !compactions.has(active.id)) compactions.set(active.id, active.status);
      if (open.length === 0 && !active) break;
      if (Date.now() > deadline) {
        const late = await Promise.all(open.map(([id]) => client.getCompaction(id)));
        throw new Error(
          `not finished within ${options.timeoutMs / 1000} s (--timeout): ` +
            late
              .map(
                (r) =>
                  `compaction ${r.id} is ${r.status}${r.step ? ` at step ${r.step}` : ''}, attempt ${r.attempts}`,
              )
              .join('; '),
        );
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 500);
      });
      for (const [id] of open) {
        const row = await client.getCompaction(id);
        if (TERMINAL.has(row.status)) compactions.set(id, row.status);
      }
    }
    // The events that follow the last one (session.compacted) print before the results.
    await new Promise((resolve) => setTimeout(resolve, 150));
  };
  await Promise.race([run(), children.failed()]);
  events.close();

  const passed = await printReport(client, {
    apiUrl,
    sessionId,
    usable,
    compactionIds: compactions.keys(),
    options,
  });
  if (!passed) process.exitCode = 1;
}

/** The database and queue keys this run named for itself go with it; chosen ones stay for a look. */
async function removePerRunPlacement(options: DemoOptions, databaseUrl: string): Promise<void> {
  const perRun = options.placement.perRun;
  await Promise.all([
    perRun?.database ? dropDatabase(databaseUrl) : null,
    perRun?.queuePrefix ? deleteQueueKeys(options.redisUrl, options.placement.queuePrefix) : null,
  ]).catch((error: Error) =>
    console.error(dim(`could not remove this run's scratch data: ${error.message}`)),
  );
}

let stopping: Promise<void> | null = null;
let interrupted = false;
/** What the run leaves to remove once its processes are stopped (set once its database exists). */
let cleanUp: () => Promise<void> = async () => undefined;
/** Stops every child (once), then says which and how long it took, and removes the run's scratch data. */
function stop(): Promise<void> {
  stopping ??= (async () => {
    const begun = Date.now();
    const running = children.running();
    await children.stopAll({ last: ['llm-stub'] });
    if (running.length > 0) {
      console.log(dim(`\nstopped ${running.join(', ')} in ${((Date.now() - begun) / 1000).toFixed(1)} s`));
    }
    await cleanUp();
  })();
  return stopping;
}
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${signal}: stopping the API, the workers and the stub`);
    void stop().finally(() => process.exit(code));
  });
}

main()
  .catch((error: Error) => {
    process.exitCode = 1;
    // Interrupted: whatever was waiting for a child that is now stopping failed; not news.
    if (interrupted) return;
    if (error instanceof UsageError) {
      console.error(error.message ? `demo: ${error.message}\n\n${USAGE}` : USAGE);
      process.exitCode = error.message ? 2 : 0;
    } else if (error instanceof NotScratchDatabaseError) {
      console.error(`\n${red('demo: cannot run')}: ${error.message} (--database / DEMO_DATABASE)`);
      process.exitCode = 2;
    } else if (error instanceof ServiceMissingError) {
      console.error(`\n${red('demo: cannot run')}: ${error.message}`);
      process.exitCode = 2;
    } else {
      // A child that died (its output included), a timeout, an HTTP error: the message says it all.
      const request =
        error instanceof CompactorApiError ? `${error.request} → ${error.status} ${error.code}: ` : '';
      console.error(`\n${red('demo failed')}: ${request}${error.message}`);
    }
  })
  .finally(async () => {
    if (interrupted) return; // the signal handler stops the children and exits
    await stop();
    // Open handles (the event stream's socket, kept-alive connections) must not keep the demo alive.
    process.exit();
  });
