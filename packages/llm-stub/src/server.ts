import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ZodError } from 'zod';
import { Barrier } from './barrier';
import { answerChatRequest, countPromptTokens } from './completions';
import type { StubFaultConfig, StubFaultConfigInput, StubFaults } from './faults';
import { effectiveFaults, faultsFromHeaders, parseFaultConfig } from './faults';
import type { ChatRequest } from './openai-wire';
import { chatRequestSchema, contextLengthErrorShape, errorShapeForStatus, wireUsage } from './openai-wire';
import { INVALID_JSON, readJson, sendError, sendJson, writeCompletion } from './http-io';

export interface LlmStubOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /** Ids listed by `GET /v1/models`. Any model name is accepted by the completions route. */
  models?: readonly string[];
  /** Fault configuration applied to chat requests (headers still override per request). */
  faults?: StubFaultConfigInput;
  /** When set, requests must send `Authorization: Bearer <apiKey>` or get a 401. */
  apiKey?: string | null;
  /** Characters per streamed content chunk. Larger is faster; 0 means one chunk. */
  streamPieceChars?: number;
}

/** What the stub saw of one chat request; tests assert on these instead of timing. */
export interface RecordedRequest {
  index: number;
  model: string;
  stream: boolean;
  maxTokens: number | null;
  promptTokens: number;
  messages: Array<{ role: string; text: string }>;
  headers: Record<string, string | string[] | undefined>;
  faults: StubFaults;
  /** HTTP status answered, or `null` while in flight or when the connection was dropped. */
  status: number | null;
  /** The client went away before the answer was complete (e.g. its AbortSignal fired). */
  clientClosed: boolean;
}

export interface LlmStubStats {
  requests: number;
  inFlight: number;
  maxInFlight: number;
  clientClosed: number;
}

export interface LlmStubEvents {
  request: [RecordedRequest];
  'client-closed': [RecordedRequest];
  finished: [RecordedRequest];
}

export interface LlmStub {
  /** Base URL for OpenAI clients, ending in `/v1`. */
  url: string;
  port: number;
  host: string;
  readonly requests: readonly RecordedRequest[];
  readonly stats: LlmStubStats;
  readonly events: EventEmitter<LlmStubEvents>;
  /** Replaces the fault configuration; its `times` budget starts over. */
  setFaults(faults: StubFaultConfigInput): void;
  /** Resolves once `count` requests have been received in total. */
  waitForRequests(count: number): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

const DEFAULT_MODELS = ['stub-summarizer', 'stub-large'];

export async function startLlmStub(options: LlmStubOptions = {}): Promise<LlmStub> {
  const models = options.models ?? DEFAULT_MODELS;
  const pieceChars = options.streamPieceChars ?? 256;
  const events = new EventEmitter<LlmStubEvents>();
  const requests: RecordedRequest[] = [];
  const stats: LlmStubStats = { requests: 0, inFlight: 0, maxInFlight: 0, clientClosed: 0 };
  const barrier = new Barrier();
  let faultConfig: StubFaultConfig = parseFaultConfig(options.faults ?? {});
  let faultedRequests = 0;

  const configuredFaultsApply = (): boolean => {
    if (faultConfig.times === null) return true;
    if (faultedRequests >= faultConfig.times) return false;
    faultedRequests += 1;
    return true;
  };

  async function handleChat(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: unknown,
  ): Promise<void> {
    const parsed = chatRequestSchema.safeParse(body);
    if (!parsed.success) {
      return sendError(res, 400, {
        message: `Invalid request: ${parsed.error.message}`,
        type: 'invalid_request_error',
        code: null,
      });
    }
    const chat = parsed.data;
    // Headers first: an invalid one is answered with a 400 and must not use up a `times` slot.
    const headerFaults = faultsFromHeaders(req.headers);
    const record: RecordedRequest = {
      index: stats.requests,
      model: chat.model,
      stream: chat.stream === true,
      maxTokens: chat.max_completion_tokens ?? chat.max_tokens ?? null,
      promptTokens: countPromptTokens(chat),
      messages: [],
      headers: req.headers,
      faults: effectiveFaults(faultConfig, configuredFaultsApply(), headerFaults),
      status: null,
      clientClosed: false,
    };
    record.messages = chat.messages.map((m) => ({
      role: m.role,
      text: typeof m.content === 'string' ? m.content : '',
    }));
    requests.push(record);
    stats.requests += 1;
    stats.inFlight += 1;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);

    // Stops waiting (latency, barrier) as soon as the client goes away, like a real server would.
    const clientGone = new AbortController();
    res.on('close', () => {
      stats.inFlight -= 1;
      if (!res.writableFinished) {
        record.clientClosed = true;
        stats.clientClosed += 1;
        clientGone.abort();
        events.emit('client-closed', record);
      }
      events.emit('finished', record);
    });
    events.emit('request', record);

    try {
      await respond(req, res, chat, record, clientGone.signal);
    } catch (error) {
      if (clientGone.signal.aborted) return;
      throw error;
    }
  }

  async function respond(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    chat: ChatRequest,
    record: RecordedRequest,
    signal: AbortSignal,
  ): Promise<void> {
    const faults = record.faults;
    const maxTokens = record.maxTokens ?? 4096;
    // Providers check the prompt length before queueing for generation: this error comes fast.
    if (faults.contextWindow !== null && record.promptTokens + maxTokens > faults.contextWindow) {
      record.status = 400;
      return sendError(
        res,
        400,
        contextLengthErrorShape(faults.contextWindow, record.promptTokens, maxTokens),
      );
    }
    if (faults.barrier !== null) await barrier.wait(faults.barrier, signal);
    if (faults.latencyMs > 0) await sleep(faults.latencyMs, undefined, { signal });

    if (faults.drop === 'before-response') return void req.socket.destroy();
    if (faults.status !== null) {
      record.status = faults.status;
      const headers: Record<string, string> =
        faults.retryAfterSeconds !== null ? { 'retry-after': String(faults.retryAfterSeconds) } : {};
      if (faults.errorBody === 'none') return void res.writeHead(faults.status, headers).end();
      return sendError(res, faults.status, errorShapeForStatus(faults.status), headers);
    }

    const { output, completionTokens } = answerChatRequest(chat, faults.output, maxTokens);
    record.status = 200;
    writeCompletion(res, {
      id: `chatcmpl-stub-${record.index}`,
      request: chat,
      output,
      usage: wireUsage(record.promptTokens, completionTokens),
      stream: record.stream,
      faults,
      pieceChars,
    });
  }

  function handleAdmin(req: http.IncomingMessage, res: http.ServerResponse, body: unknown): void {
    if (req.url === '/_stub/stats') return sendJson(res, 200, { ...stats, faults: faultConfig });
    if (req.url === '/_stub/faults' && req.method === 'PUT') {
      stub.setFaults(body as StubFaultConfigInput);
      return sendJson(res, 200, { faults: faultConfig });
    }
    if (req.url === '/_stub/faults' && req.method === 'DELETE') {
      stub.setFaults({});
      return sendJson(res, 200, { faults: faultConfig });
    }
    sendError(res, 404, {
      message: `Unknown stub route ${req.method} ${req.url}`,
      type: 'invalid_request_error',
      code: null,
    });
  }

  const server = http.createServer((req, res) => {
    void route(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.socket?.destroy();
      if (error instanceof ZodError) {
        return sendError(res, 400, {
          message: `Invalid stub setting: ${error.message}`,
          type: 'invalid_request_error',
          code: null,
        });
      }
      sendError(res, 500, errorShapeForStatus(500));
    });
  });

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (
      options.apiKey &&
      path?.startsWith('/v1/') &&
      req.headers.authorization !== `Bearer ${options.apiKey}`
    ) {
      return sendError(res, 401, errorShapeForStatus(401));
    }
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: 'compactor-llm-stub',
          ...(faultConfig.contextWindow !== null ? { max_model_len: faultConfig.contextWindow } : {}),
        })),
      });
    }
    if (req.method === 'GET' && path === '/healthz') return sendJson(res, 200, { ok: true });
    const body = req.method === 'POST' || req.method === 'PUT' ? await readJson(req) : undefined;
    if (body === INVALID_JSON) {
      return sendError(res, 400, {
        message: 'The request body is not valid JSON.',
        type: 'invalid_request_error',
        code: null,
      });
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') return handleChat(req, res, body);
    if (path?.startsWith('/_stub/')) return handleAdmin(req, res, body);
    sendError(res, 404, {
      message: `Unknown route ${req.method} ${path}`,
      type: 'invalid_request_error',
      code: null,
    });
  }

  // Sockets are tracked so close() does not wait for idle keep-alive connections.
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const stub: LlmStub = {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    host: address.address,
    requests,
    stats,
    events,
    setFaults(faults) {
      faultConfig = parseFaultConfig(faults);
      faultedRequests = 0;
    },
    waitForRequests(count) {
      if (requests.length >= count) return Promise.resolve(requests.slice(0, count));
      return new Promise((resolve) => {
        const onRequest = (): void => {
          if (requests.length < count) return;
          events.off('request', onRequest);
          resolve(requests.slice(0, count));
        };
        events.on('request', onRequest);
      });
    },
    close() {
      return new Promise((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        for (const socket of sockets) socket.destroy();
      });
    },
  };
  return stub;
}
