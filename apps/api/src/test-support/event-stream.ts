import { TENANT_A_KEY } from './api';

/** An open event stream, read chunk by chunk with `fetch`. */
export interface Stream {
  status: number;
  headers: Headers;
  /** Waits for the accumulated text to satisfy `done`, or fails after `timeoutMs`. */
  until(done: (text: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves when the server ended the stream. */
  ended(timeoutMs?: number): Promise<void>;
  close(): void;
}

export async function openStream(
  baseUrl: string,
  session: string,
  key = TENANT_A_KEY,
  headers: Record<string, string> = {},
): Promise<Stream> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/sessions/${session}/events`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let finished = false;
  const waiters = new Set<() => void>();
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        for (const wake of waiters) wake();
      }
    } catch {
      // aborted by the test
    }
    finished = true;
    for (const wake of waiters) wake();
  })();
  const wait = (check: () => boolean, what: string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const wake = () => {
        if (!check()) return;
        clearTimeout(timer);
        waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        reject(new Error(`${what} within ${timeoutMs} ms; stream so far:\n${text}`));
      }, timeoutMs);
      waiters.add(wake);
      wake();
    });
  return {
    status: response.status,
    headers: response.headers,
    async until(done, timeoutMs = 5000) {
      await wait(() => done(text), 'no match', timeoutMs);
      return text;
    },
    ended: (timeoutMs = 5000) => wait(() => finished, 'stream did not end', timeoutMs),
    close: () => controller.abort(),
  };
}
