import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One answer the upstream gave, as its bytes came. */
export interface RecordedAnswer {
  status: number;
  body: string;
}

/**
 * A pass-through in front of the upstream LLM stub that keeps each answer's raw body, so a test
 * can compare what the client got with what the provider sent (the stub records requests only).
 */
export interface UpstreamRecorder {
  /** Base URL to configure as the upstream (`…/v1`). */
  readonly url: string;
  readonly answers: RecordedAnswer[];
  /** The request bodies as they were sent, in arrival order (the stub records what it reads of them). */
  readonly requestBodies: string[];
  close(): Promise<void>;
}

export async function startUpstreamRecorder(target: string): Promise<UpstreamRecorder> {
  const origin = new URL(target).origin;
  const answers: RecordedAnswer[] = [];
  const requestBodies: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).flatMap(([name, value]) =>
          typeof value === 'string' && name !== 'host' && name !== 'content-length' ? [[name, value]] : [],
        ),
      );
      requestBodies.push(Buffer.concat(chunks).toString('utf8'));
      const abort = new AbortController();
      res.on('close', () => abort.abort());
      void fetch(`${origin}${req.url}`, {
        method: req.method,
        headers,
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
        signal: abort.signal,
      })
        .then(async (upstream) => {
          res.writeHead(upstream.status, Object.fromEntries(upstream.headers));
          const answer = { status: upstream.status, body: '' };
          answers.push(answer);
          const decoder = new TextDecoder();
          for await (const piece of upstream.body ?? []) {
            answer.body += decoder.decode(piece as Uint8Array, { stream: true });
            res.write(piece);
          }
          res.end();
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    answers,
    requestBodies,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
