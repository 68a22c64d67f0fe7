/**
 * The idle bound on an upstream body: a provider silent past the bound fails the body with the
 * failure given and has its call aborted; a body that keeps coming, however slowly it is read,
 * passes through byte for byte.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { UpstreamFailure } from './errors';
import { withIdleBound } from './upstream-idle';

const encoder = new TextEncoder();
const failure = () => new UpstreamFailure(504, { error: 'idle' }, 'idle');

/** A provider's body: `pieces` on demand, then silence when `stallAfter` of them went out. */
function providerBody(pieces: string[], stallAfter = Number.POSITIVE_INFINITY) {
  let sent = 0;
  const cancelled: unknown[] = [];
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= stallAfter) return new Promise<void>(() => {});
      if (sent === pieces.length) return controller.close();
      controller.enqueue(encoder.encode(pieces[sent++]!));
    },
    cancel: (reason) => void cancelled.push(reason),
  });
  return { response: new Response(body, { status: 200, headers: { 'x-provider': 'yes' } }), cancelled };
}

describe('withIdleBound', () => {
  it('fails a body silent past the bound with the failure, and aborts the call', async () => {
    const { response } = providerBody(['{"half":'], 1);
    let aborted = 0;
    const bounded = withIdleBound(response, 50, () => (aborted += 1), failure);
    const reader = bounded.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('{"half":');
    await expect(reader.read()).rejects.toMatchObject({ name: 'UpstreamFailure', status: 504 });
    expect(aborted).toBe(1);
  });

  it('passes a prompt body through whole, status and headers kept, however slowly it is read', async () => {
    const { response } = providerBody(['data: a\n\n', 'data: b\n\n', 'data: [DONE]\n\n']);
    let aborted = 0;
    const bounded = withIdleBound(response, 50, () => (aborted += 1), failure);
    expect(bounded.status).toBe(200);
    expect(bounded.headers.get('x-provider')).toBe('yes');
    const reader = bounded.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      // A reader slower than the bound: the provider is not waited on, so it is not idle.
      await delay(120);
      const next = await reader.read();
      if (next.done) break;
      text += decoder.decode(next.value);
    }
    expect(text).toBe('data: a\n\ndata: b\n\ndata: [DONE]\n\n');
    expect(aborted).toBe(0);
  });

  it('leaves the body as it is with a bound of 0', () => {
    const { response } = providerBody(['x']);
    expect(withIdleBound(response, 0, () => {}, failure)).toBe(response);
  });
});
