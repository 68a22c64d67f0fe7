/**
 * `npm run demo`: compacts a real-looking coding-agent session end to end and prints the
 * context before and after.
 *
 * It runs the real API in-process on a free port and talks to it over HTTP, stores the session
 * in Postgres (database `compactor_demo`, or DATABASE_URL), and summarises with the LLM stub, or
 * with a real provider when OPENAI_BASE_URL / OPENAI_API_KEY are set (SUMMARIZER_MODEL names the
 * model). `--session file.jsonl[:n]` replays session n of a JSONL file of `{ messages }` lines
 * instead of the built-in one.
 */
import { readFileSync } from 'node:fs';
import {
  createDatabase,
  ensureDatabase,
  findSession,
  migrateDatabase,
  redactUrl,
  type MessageInput,
} from '@compactor/db';
import { buildServer, createAuthenticator } from '@compactor/api';
import { createLlm } from '@compactor/llm';
import { startLlmStub } from '@compactor/llm-stub';
import { requestCompaction, runCompaction } from '@compactor/queue';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { encodingForModel, getTokenizer } from '@compactor/tokenizer';
import { validateContext, type Message } from '@compactor/core';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_demo';
const CONTEXT_WINDOW = 32_000;

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const line = (title: string) => console.log(`\n${bold(`── ${title} `.padEnd(78, '─'))}`);

function loadSession(): MessageInput[] {
  const arg = process.argv.indexOf('--session');
  if (arg === -1) return generateCodingSession({ turns: 6 });
  const [file, index = '0'] = (process.argv[arg + 1] ?? '').split(':');
  const lines = readFileSync(file!, 'utf8').split('\n').filter(Boolean);
  const chosen = JSON.parse(lines[Number(index)] ?? 'null') as { messages: MessageInput[] } | null;
  if (!chosen) throw new Error(`no session ${index} in ${file}`);
  return chosen.messages;
}

function preview(message: Message | Record<string, unknown>, width = 70): string {
  const m = message as Message;
  const text = m.parts
    .map((p) =>
      p.type === 'text'
        ? p.text
        : p.type === 'tool'
          ? `[${p.tool} → ${(p.output ?? p.error ?? '').length} chars]`
          : `[${p.type}]`,
    )
    .join(' ')
    .replace(/\s+/g, ' ');
  const flag = m.summary ? ' (summary)' : '';
  return `${String(m.seq).padStart(4)} ${m.role.padEnd(9)}${flag} ${text.slice(0, width)}${text.length > width ? '…' : ''}`;
}

async function main(): Promise<void> {
  await ensureDatabase(DATABASE_URL);
  await migrateDatabase(DATABASE_URL);
  const database = createDatabase(DATABASE_URL, { applicationName: 'compactor-demo' });
  const realProvider = Boolean(process.env.OPENAI_BASE_URL ?? process.env.OPENAI_API_KEY);
  const stub = realProvider ? null : await startLlmStub();
  const llm = createLlm({
    apiKey: process.env.OPENAI_API_KEY ?? 'stub',
    baseURL: process.env.OPENAI_BASE_URL ?? stub!.url,
    timeoutMs: 120_000,
  });
  const app = await buildServer({
    db: database.db,
    redis: { ping: async () => 'PONG' },
    auth: createAuthenticator(database.db, new Map([['demo-key', 'demo']])),
    tokenizerFor: (model) => getTokenizer(encodingForModel(model)),
    clock: () => new Date(),
  });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: 'Bearer demo-key', ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : null,
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${JSON.stringify(json)}`);
    return json as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  try {
    line('Setup');
    console.log(`API       ${base} (docs at ${base}/docs)`);
    console.log(`Postgres  ${redactUrl(DATABASE_URL)}`);
    console.log(
      `LLM       ${realProvider ? (process.env.OPENAI_BASE_URL ?? 'OpenAI') : `stub at ${stub!.url}`}`,
    );

    const messages = loadSession();
    const sessionId = `demo-${Date.now()}`;
    await call('POST', '/v1/sessions', {
      id: sessionId,
      model: {
        id: process.env.SUMMARIZER_MODEL ?? 'stub-summarizer',
        provider: 'openai',
        contextWindow: CONTEXT_WINDOW,
        maxOutputTokens: 4_000,
      },
      // OpenCode's prune budgets (protect 40k, prune ≥ 20k) assume 128k+ windows; scaled to this one.
      policy: {
        pruning: { protectTokens: 8_000, minimumTokens: 4_000 },
        ...(realProvider ? {} : { summarizer: { contextWindow: CONTEXT_WINDOW } }),
      },
    });

    line(`Ingest: ${messages.length} messages, one turn at a time`);
    let batch: MessageInput[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const { status } = await call('POST', `/v1/sessions/${sessionId}/messages`, { messages: batch });
      console.log(
        `  +${String(batch.length).padStart(2)} messages → ${String(status.tokens).padStart(6)} tokens, ${String(status.percent).padStart(5)} % of usable${status.overflow ? '  ← over the limit' : ''}`,
      );
      batch = [];
    };
    for (const message of messages) {
      if (message.role === 'user') await flush();
      batch.push(message);
    }
    await flush();

    const before = await call('GET', `/v1/sessions/${sessionId}/context`);
    const status = (await call('GET', `/v1/sessions/${sessionId}`)).status;
    line(
      `BEFORE: ${before.messages.length} messages, ${before.tokens} stored tokens, status ${status.tokens} tokens (${status.percent} % of ${status.usable} usable)`,
    );
    for (const m of before.messages.slice(0, 4)) console.log(preview(m));
    console.log(`     … ${before.messages.length - 6} more …`);
    for (const m of before.messages.slice(-2)) console.log(preview(m));

    line('Compaction: prune → summarize → finalize');
    const session = await findSession(database.db, 'demo', sessionId);
    const { compaction } = await requestCompaction(database.db, session!, { reason: 'manual' });
    const started = Date.now();
    const result = await runCompaction(
      {
        db: database.db,
        llm,
        clock: () => new Date(),
        log: { info: () => {}, warn: (f, m) => console.warn(m, f) },
      },
      compaction.id,
    );
    const row = result.compaction!;
    console.log(`status          ${result.status} in ${Date.now() - started} ms (${row.attempts} attempt)`);
    console.log(`pruned          ${row.prunedParts} tool outputs, ${row.prunedTokens} tokens`);
    console.log(
      `summarized by   ${row.model ?? 'truncate fallback'}${row.usageInput ? ` (${row.usageInput} in / ${row.usageOutput} out tokens)` : ''}`,
    );
    console.log(
      `tokens          ${row.tokensBefore} → ${row.tokensAfter} (${Math.round((1 - row.tokensAfter! / row.tokensBefore!) * 100)} % smaller)`,
    );
    console.log(
      `messages        ${row.messagesBefore} → ${row.messagesAfter}; boundary at seq ${row.boundarySeq}`,
    );

    const after = await call('GET', `/v1/sessions/${sessionId}/context`);
    const afterStatus = (await call('GET', `/v1/sessions/${sessionId}`)).status;
    line(
      `AFTER: ${after.messages.length} messages, ${after.tokens} tokens (${afterStatus.percent} % of usable)`,
    );
    for (const m of after.messages) console.log(preview(m));
    const summary = (after.messages as Message[]).find((m) => m.summary && m.role === 'assistant');
    if (summary) {
      line('The summary the model will see');
      const text = summary.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
      console.log(text.split('\n').slice(0, 45).join('\n'));
    }
    const openai = await call('GET', `/v1/sessions/${sessionId}/context?format=openai`);
    const problems = validateContext(openai.messages);
    line('Ready to send');
    console.log(
      `format=openai: ${openai.messages.length} Chat Completions messages, ${problems.length === 0 ? 'valid (every tool result answers a call)' : `PROBLEMS: ${JSON.stringify(problems)}`}`,
    );
    console.log(
      `raw history still holds all ${messages.length + row.summaryMessageIds.length} messages: GET /v1/sessions/${sessionId}/messages`,
    );
    if (problems.length > 0 || result.status !== 'completed') process.exitCode = 1;
  } finally {
    await app.close();
    await stub?.close();
    await database.close();
  }
}

main().catch((error: Error) => {
  console.error(`demo failed: ${error.message}`);
  process.exit(1);
});
