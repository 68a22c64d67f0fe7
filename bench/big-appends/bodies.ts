/**
 * The bodies and requests of bench/big-appends.bench.ts: tenant A's 31 MiB appends (a single tool
 * output, or 1,000 messages of ~31 KB) and the POST both tenants send.
 */
import { apiHeaders } from '../harness';

export const MiB = 1024 * 1024;
const BIG_BODY_BYTES = 31 * MiB;
/** Times a large append answered 429 is sent again (after its Retry-After). */
const LARGE_RETRIES = 30;

/** A tool's log output, varied enough that the tokenizer merges as on real text. */
export function logText(bytes: number, seed: number): string {
  const words = [
    'error',
    'expected',
    'received',
    'src/app.ts:41:7',
    'at',
    'Object.<anonymous>',
    'PASS',
    'FAIL',
  ];
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const line = `${i + seed} ${words[(i * 7) % words.length]} ${words[(i * 3 + seed) % words.length]} 0x${(i * 2654435761).toString(16)}`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n').slice(0, bytes);
}

/** One 31 MiB append: a single tool output, or 1,000 messages of ~31 KB each. */
export function bigBody(shape: 'one-part' | 'many-messages', seed: number): string {
  if (shape === 'one-part') {
    // Each line break travels as two bytes (`\\n`).
    const output = logText(Math.floor(BIG_BODY_BYTES * 0.975), seed);
    return JSON.stringify({
      messages: [
        {
          id: `big-${seed}`,
          role: 'assistant',
          parts: [
            {
              type: 'tool',
              callId: 'c1',
              tool: 'bash',
              status: 'completed',
              input: { cmd: 'cat log' },
              output,
            },
          ],
        },
      ],
    });
  }
  const each = Math.floor((BIG_BODY_BYTES * 0.975) / 1000) - 200;
  return JSON.stringify({
    messages: Array.from({ length: 1000 }, (_, i) => ({
      id: `big-${seed}-${i}`,
      role: 'assistant',
      parts: [
        {
          type: 'tool',
          callId: `c${i}`,
          tool: 'bash',
          status: 'completed',
          input: { i },
          output: logText(each, seed + i),
        },
      ],
    })),
  });
}

/** A POST's status; 0 when the connection failed (an API refusing mid-upload, a reset under load). */
export async function post(
  api: string,
  key: string,
  session: string,
  body: string | Uint8Array,
): Promise<number> {
  try {
    const response = await fetch(`${api}/v1/sessions/${session}/messages`, {
      method: 'POST',
      headers: apiHeaders(key),
      body,
    });
    await response.arrayBuffer();
    if (response.status === 429) retryAfter.set(session, Number(response.headers.get('retry-after') ?? 1));
    return response.status;
  } catch {
    return 0;
  }
}
const retryAfter = new Map<string, number>();

/** A large append, sent again after its Retry-After while it is refused: its final status and its tries. */
export async function postLarge(
  api: string,
  session: string,
  body: Uint8Array,
): Promise<{ status: number; tries: number }> {
  for (let tries = 1; ; tries++) {
    const status = await post(api, 'key-a', session, body);
    if (status !== 429 || tries > LARGE_RETRIES) return { status, tries };
    await new Promise((resolve) => setTimeout(resolve, (retryAfter.get(session) ?? 1) * 1000));
  }
}
