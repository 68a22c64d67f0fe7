/**
 * The floor under the drop-in benchmark: what a bare proxy costs on this machine. A Fastify
 * process of its own parses the same client bodies (1,000 messages by default), forwards a
 * served context of a given size (the tail of the client's messages, FLOOR_SERVED_MESSAGES) to
 * the same in-process stub through the `openai` SDK (raw response, as the gateway does), and
 * relays the answer, whole or streamed; each turn also goes straight to the stub, order
 * alternating, as in bench/dropin.bench.ts. What is left of the 15 ms goal for Compactor's own
 * work is 15 ms less this proxy's added time. No database, no hashing, nothing stored.
 *
 * `npx tsx bench/dropin/floor.ts`; FLOOR_SIZE (default 1000), FLOOR_SAMPLES (turns per mode,
 * default 40), FLOOR_SERVED_MESSAGES (default 300).
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import OpenAI from 'openai';
import { startLlmStub, type RecordedRequest } from '@compactor/llm-stub';
import { AgentConversation, callModel } from './conversation';
import { spread } from '../harness';
import { cpuSecondsOf } from '../processes';

if (process.argv.includes('--server')) await serve();
else await measure();

/** The proxy: parse, keep the tail as the "served context", forward, relay. */
async function serve(): Promise<void> {
  const { default: Fastify } = await import('fastify');
  const upstream = new OpenAI({ baseURL: process.env.FLOOR_UPSTREAM!, apiKey: 'stub', maxRetries: 0 });
  const keep = Number(process.env.FLOOR_SERVED_MESSAGES ?? 300);
  const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  app.post('/v1/chat/completions', async (request, reply) => {
    const body = request.body as { messages: unknown[]; stream?: boolean };
    const served = { ...body, messages: [body.messages[0], ...body.messages.slice(-keep)] };
    const response = await upstream.chat.completions.create(served as never).asResponse();
    reply.header('content-type', response.headers.get('content-type') ?? 'application/json');
    if (!body.stream) return reply.send(await response.text());
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) reply.raw.write(chunk);
    reply.raw.end();
    return reply;
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  console.log(`floor listening at ${url}`);
}

async function measure(): Promise<void> {
  const size = Number(process.env.FLOOR_SIZE ?? 1000);
  const samples = Number(process.env.FLOOR_SAMPLES ?? 40);
  const stub = await startLlmStub();
  const prompts: number[] = [];
  let viaProxy = false;
  stub.events.on('request', (record: RecordedRequest) => {
    if (viaProxy) prompts.push(record.promptTokens);
    (stub.requests as RecordedRequest[]).length = 0;
  });
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, '--server'], {
    env: { ...process.env, FLOOR_UPSTREAM: stub.url },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout!.on('data', (data: Buffer) => {
      out += data.toString();
      const found = /floor listening at (\S+)/.exec(out)?.[1];
      if (found) resolve(found);
    });
  });
  try {
    const direct = new OpenAI({ baseURL: stub.url, apiKey: 'stub', maxRetries: 0 });
    const proxy = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'stub', maxRetries: 0 });
    const conversations = Array.from({ length: 8 }, (_, i) => new AgentConversation(`floor-${i}`, size));
    for (const c of conversations) await callModel(proxy, c, false);
    const times = {
      proxy: { whole: [] as number[], stream: [] as number[] },
      direct: { whole: [] as number[], stream: [] as number[] },
    };
    const load = loadavg()[0]!;
    const cpuBefore = cpuSecondsOf(child.pid!);
    for (let i = 0; i < 2 * samples; i++) {
      const conversation = conversations[i % conversations.length]!;
      const mode = i % 2 === 0 ? 'whole' : 'stream';
      const timed = async (client: OpenAI, into: number[]) => {
        const started = performance.now();
        const message = await callModel(client, conversation, mode === 'stream');
        into.push(performance.now() - started);
        return message;
      };
      if (Math.floor(i / 2) % 2 === 0) await timed(direct, times.direct[mode]);
      viaProxy = true;
      const message = await timed(proxy, times.proxy[mode]);
      viaProxy = false;
      if (Math.floor(i / 2) % 2 !== 0) await timed(direct, times.direct[mode]);
      conversation.answered(message);
    }
    const cpuMs = ((cpuSecondsOf(child.pid!) - cpuBefore) * 1000) / (2 * samples);
    const mean = prompts.reduce((a, b) => a + b, 0) / Math.max(1, prompts.length);
    console.log(
      `floor at ${size} messages, ${samples} turns per mode, load ${load.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}; ` +
        `served ~${mean.toFixed(0)} stub tokens; proxy CPU ${cpuMs.toFixed(1)} ms a request`,
    );
    for (const mode of ['whole', 'stream'] as const) {
      const via = spread(times.proxy[mode]);
      const base = spread(times.direct[mode]);
      console.log(
        `  ${mode}: proxy p50 ${via.p50.toFixed(1)} ms, stub directly ${base.p50.toFixed(1)} ms: ` +
          `the proxy adds p50 ${(via.p50 - base.p50).toFixed(1)} ms (p99 ${(via.p99 - base.p99).toFixed(1)})`,
      );
    }
  } finally {
    child.kill();
    await stub.close();
  }
}
