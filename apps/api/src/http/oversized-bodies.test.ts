/**
 * A body over the limit gets its 413 with the error body over a real socket, whether the client
 * declared its length or streams it, and one that asks first (`Expect: 100-continue`) is refused
 * before it sends anything. Before, the server closed the connection while the client was still
 * uploading: the client saw EPIPE, not the answer, and retried the upload.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TENANT_A_KEY, useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';

const LIMIT = 256 * 1024;
const api = useTestApi({ bodyLimit: LIMIT });
let url: string;

beforeAll(async () => {
  url = await api.app.listen({ port: 0, host: '127.0.0.1' });
  await newSession(api, 'big');
});
afterAll(async () => {
  await api.app.close();
});

const headers = { 'content-type': 'application/json', authorization: `Bearer ${TENANT_A_KEY}` };

/** A body streamed in small chunks, each after a turn of the event loop: the server answers mid-upload. */
function slowBody(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(16 * 1024).fill(0x61);
  let sent = 0;
  return new ReadableStream({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (sent >= bytes) return controller.close();
      controller.enqueue(chunk);
      sent += chunk.length;
    },
  });
}

describe('a body over the limit', () => {
  it.each(['/v1/sessions/big/messages', '/v1/sessions'])(
    'is answered 413 with the error body on %s, declared or streamed',
    async (path) => {
      for (let attempt = 0; attempt < 3; attempt++) {
        const declared = await fetch(`${url}${path}`, {
          method: 'POST',
          headers,
          body: new Uint8Array(8 * LIMIT).fill(0x61),
        });
        expect(declared.status).toBe(413);
        expect(((await declared.json()) as { error: unknown }).error).toMatchObject({
          code: 'payload_too_large',
          message: expect.stringContaining(`(${LIMIT} bytes)`),
        });
        const streamed = await fetch(`${url}${path}`, {
          method: 'POST',
          headers,
          body: slowBody(4 * LIMIT),
          duplex: 'half',
        } as RequestInit);
        expect(streamed.status).toBe(413);
        expect(((await streamed.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
      }
    },
  );

  it('is refused before it is sent when the client expects 100-continue', async () => {
    const port = Number(new URL(url).port);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          `POST /v1/sessions/big/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
            `Authorization: Bearer ${TENANT_A_KEY}\r\nContent-Length: ${64 * LIMIT}\r\nExpect: 100-continue\r\n\r\n`,
        );
      });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (data: string) => (text += data));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).not.toContain('100 Continue');
    expect(answer).toContain('"code":"payload_too_large"');
  });

  it('lets a body within the limit come after 100 Continue, served as usual', async () => {
    const port = Number(new URL(url).port);
    const payload = JSON.stringify({
      messages: [{ role: 'user', parts: [{ type: 'text', text: 'Fix it.' }] }],
    });
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          `POST /v1/sessions/big/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
            `Authorization: Bearer ${TENANT_A_KEY}\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n` +
            `Expect: 100-continue\r\nConnection: close\r\n\r\n`,
        );
      });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (data: string) => {
        // The body goes only once the server said to send it.
        if (text === '' && data.startsWith('HTTP/1.1 100 Continue')) socket.write(payload);
        text += data;
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
  });
});
