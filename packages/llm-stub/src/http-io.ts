import type http from 'node:http';
import type { StubAnswer } from './completions';
import type { StubRequest } from './conversation';
import type { StubDropFault, StubFaults } from './faults';
import { completionBody, errorBody, streamEvents, wireUsage } from './openai-wire';

/** Request bodies above this are refused: the stub is for tests, not for load of that kind. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export const INVALID_JSON = Symbol('invalid-json');

/** The parsed JSON body, `undefined` when empty, {@link INVALID_JSON} when unreadable or too big. */
export async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return INVALID_JSON;
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return INVALID_JSON;
  }
}

export function sendBody(
  res: http.ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
}

export function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

export function sendError(
  res: http.ServerResponse,
  status: number,
  shape: { message: string; type: string; code: string | null },
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(errorBody(shape));
}

/** What any protocol's writer gets: the request, its answer, and the faults that break it. */
export interface AnswerWrite {
  id: string;
  request: StubRequest;
  answer: StubAnswer;
  promptTokens: number;
  faults: Pick<StubFaults, 'output' | 'drop'>;
  /** Content characters per SSE chunk; 0 = one chunk. */
  pieceChars: number;
}

/** A Chat completion as JSON or SSE, broken on purpose when the faults say so. */
export function writeCompletion(res: http.ServerResponse, write: AnswerWrite): void {
  const { id, request, faults } = write;
  const { output, completionTokens } = write.answer;
  const usage = wireUsage(write.promptTokens, completionTokens);
  if (!request.stream) {
    const json =
      faults.output === 'malformed'
        ? `{"id":"${id}","choices":[{"message":`
        : JSON.stringify(completionBody(id, request.model, output, usage));
    res.writeHead(200, { 'content-type': 'application/json' });
    return endBody(res, json, faults.drop);
  }
  res.writeHead(200, SSE_HEADERS);
  const events = streamEvents(id, request.model, output, usage, {
    includeUsage: request.includeUsage,
    pieceChars: write.pieceChars || Number.POSITIVE_INFINITY,
  });
  // A malformed stream: the role chunk, then an event that is not JSON, and no [DONE].
  if (faults.output === 'malformed')
    events.splice(1, events.length - 1, `data: {"id":"${id}","choices":[{\n\n`);
  endBody(res, events.join(''), faults.drop);
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

/** Writes the answer whole, or broken as the drop fault says. */
export function endBody(res: http.ServerResponse, body: string, drop: StubDropFault | null): void {
  if (drop === 'mid-body') return dropMidBody(res, body);
  if (drop === 'stall-mid-body') return void res.write(firstHalf(body));
  res.end(body);
}

const firstHalf = (body: string) => body.slice(0, Math.max(1, body.length >> 1));

/** Writes the first half of an answer, then kills the socket: the "connection reset" providers produce. */
export function dropMidBody(res: http.ServerResponse, body: string): void {
  res.write(firstHalf(body), () => res.socket?.destroy());
}
