/**
 * Issue 9's defects as black-box probes against a running API: `tsx scripts/defect-probes.ts
 * <base-url> [api-key] [log-file]`. Each probe sends the hostile request the issue describes and
 * prints what came back; a 500 (or the wrong success) means the defect is there. Run against the
 * code before the fixes and after them to show each regression test's scenario failed before.
 * With `log-file` (the API's output), it also checks that no message text reached the log.
 */
import { readFileSync } from 'node:fs';

const [base, key = '', logFile] = process.argv.slice(2);
if (!base) {
  console.error('usage: tsx scripts/defect-probes.ts <base-url> [api-key] [log-file]');
  process.exit(2);
}
const run = Date.now().toString(36);
const MARKER = `secret-text-${run}`;

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: response.status, text: (await response.text()).slice(0, 160) };
}

async function session(id: string, extra: Record<string, unknown> = {}): Promise<number> {
  return (await call('POST', '/v1/sessions', { id, model: { id: 'gpt-4o', provider: 'openai' }, ...extra }))
    .status;
}

const text = (value: string) => ({ type: 'text', text: value });
const message = (id: string, parts: unknown[], extra: Record<string, unknown> = {}) => ({
  id,
  role: 'assistant',
  parts,
  ...extra,
});

/** A JSON document nested `depth` levels deep, as raw text (JSON.stringify would overflow first). */
const deepJson = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

const probes: Array<[string, () => Promise<string>]> = [
  [
    '1 usage sums past int4 (append, then GET)',
    async () => {
      const id = `d1-${run}`;
      await session(id);
      const usage = { input: 2_147_483_647, output: 0, reasoning: 0, cacheRead: 1, cacheWrite: 0 };
      const append = await call('POST', `/v1/sessions/${id}/messages`, {
        messages: [message('m1', [text('hi')], { finish: 'stop', usage })],
      });
      const get = await call('GET', `/v1/sessions/${id}`);
      return `append ${append.status}, then GET ${get.status}`;
    },
  ],
  [
    '2 NUL in text / lone surrogate in metadata',
    async () => {
      const id = `d2-${run}`;
      await session(id);
      const nul = await call('POST', `/v1/sessions/${id}/messages`, {
        messages: [message('m1', [text(`${MARKER} a\u0000b`)])],
      });
      const surrogate = await call(
        'POST',
        `/v1/sessions/${id}/messages`,
        `{"messages":[{"id":"m2","role":"user","parts":[{"type":"text","text":"x"}],"metadata":{"k":"\\ud800"}}]}`,
      );
      return `NUL ${nul.status}, lone surrogate ${surrogate.status}`;
    },
  ],
  [
    '3 contextWindow 2^31',
    async () => `create ${await session(`d3-${run}`, { model: { id: 'gpt-4o', contextWindow: 2 ** 31 } })}`,
  ],
  [
    '4 createdAt year 0',
    async () => {
      const id = `d4-${run}`;
      await session(id);
      const r = await call('POST', `/v1/sessions/${id}/messages`, {
        messages: [message('m1', [text('x')], { createdAt: '0000-01-01T00:00:00Z' })],
      });
      return `append ${r.status}`;
    },
  ],
  [
    '5 tool input nested 10,000 deep',
    async () => {
      const id = `d5-${run}`;
      await session(id);
      const body = `{"messages":[{"id":"m1","role":"assistant","parts":[{"type":"tool","callId":"c1","tool":"t","status":"completed","output":"o","input":${deepJson(10_000)}}]}]}`;
      return `append ${(await call('POST', `/v1/sessions/${id}/messages`, body)).status}`;
    },
  ],
  [
    '6 one batch of 14 messages × 5,000 tool parts',
    async () => {
      const id = `d6-${run}`;
      await session(id);
      const messages = Array.from({ length: 14 }, (_, m) =>
        message(
          `m${m}`,
          Array.from({ length: 5_000 }, (_, p) => ({
            type: 'tool',
            callId: `c${m}_${p}`,
            tool: 'read',
            status: 'completed',
            input: {},
            output: 'ok',
          })),
        ),
      );
      return `append ${(await call('POST', `/v1/sessions/${id}/messages`, { messages })).status}`;
    },
  ],
  [
    '7 identical PATCH retry, input {"b":1,"a":2}',
    async () => {
      const id = `d7-${run}`;
      await session(id);
      await call('POST', `/v1/sessions/${id}/messages`, {
        messages: [
          message('m1', [
            { type: 'tool', callId: 'c1', tool: 't', status: 'pending', input: { b: 1, a: 2 } },
          ]),
        ],
      });
      const patch = {
        finish: 'tool-calls',
        parts: [
          {
            type: 'tool',
            callId: 'c1',
            tool: 't',
            status: 'completed',
            input: { b: 1, a: 2 },
            output: 'done',
          },
        ],
      };
      const first = await call('PATCH', `/v1/sessions/${id}/messages/m1`, patch);
      const again = await call('PATCH', `/v1/sessions/${id}/messages/m1`, patch);
      return `PATCH ${first.status}, same PATCH again ${again.status}`;
    },
  ],
  [
    '8 a 200-character session id',
    async () => {
      const id = `d8-${run}-`.padEnd(200, 'x');
      const created = await session(id);
      return `create ${created}, GET ${(await call('GET', `/v1/sessions/${id}`)).status}`;
    },
  ],
];

for (const [name, probe] of probes) {
  try {
    console.log(`${name.padEnd(48)} ${await probe()}`);
  } catch (error) {
    console.log(`${name.padEnd(48)} request failed: ${(error as Error).message}`);
  }
}
if (logFile) {
  const log = readFileSync(logFile, 'utf8');
  console.log(
    `${'10 message text in the log'.padEnd(48)} ${log.includes(MARKER) ? 'FOUND' : 'absent'} (longest line ${Math.max(...log.split('\n').map((l) => l.length))} characters)`,
  );
}
