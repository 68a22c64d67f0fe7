import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ZodError } from 'zod';
import { Barrier } from './barrier';
import { countPromptTokens } from './completions';
import type { StubFaultConfig, StubFaultConfigInput, StubFaults } from './faults';
import { effectiveFaults, faultsFromHeaders, parseFaultConfig } from './faults';
import { errorShapeForStatus } from './openai-wire';
import { INVALID_JSON, readJson, sendBody, sendError, sendJson } from './http-io';
import type { WireProtocol } from './protocols';
import { ANTHROPIC_PROTOCOL, OPENAI_PROTOCOL } from './protocols';
import type { RecordedRequest } from './recorded-request';
import { respond } from './respond';

export interface LlmStubOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /** Ids listed by `GET /v1/models`. Any model name is accepted by the completions route. */
  models?: readonly string[];
  /** Fault configuration applied to chat requests (headers still override per request). */
  faults?: StubFaultConfigInput;
  /** When set, requests must send `Authorization: Bearer <apiKey>` or `x-api-key: <apiKey>`, or get a 401. */
  apiKey?: string | null;
  /** Characters per streamed content chunk. Larger is faster; 0 means one chunk. */
  streamPieceChars?: number;
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
  /** Base URL for Anthropic clients, which add `/v1/messages` themselves: `url` without `/v1`. */
  origin: string;
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

export type { RecordedRequest } from './recorded-request';

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

  async function handleModelRequest(
    protocol: WireProtocol,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: unknown,
  ): Promise<void> {
    const parsed = protocol.parse(body);
    if ('invalid' in parsed) return sendBody(res, 400, protocol.errorBody(400, parsed.invalid));
    const request = parsed.request;
    // Headers first: an invalid one is answered with a 400 and must not use up a `times` slot.
    let headerFaults: Partial<StubFaults>;
    try {
      headerFaults = faultsFromHeaders(req.headers);
    } catch (error) {
      if (!(error instanceof ZodError)) throw error;
      return sendBody(res, 400, protocol.errorBody(400, `Invalid stub setting: ${error.message}`));
    }
    const record: RecordedRequest = {
      index: stats.requests,
      protocol: protocol.name,
      model: request.model,
      stream: request.stream,
      maxTokens: request.maxTokens,
      promptTokens: countPromptTokens(request),
      messages: request.messages,
      toolNames: request.toolNames,
      headers: req.headers,
      faults: effectiveFaults(faultConfig, configuredFaultsApply(), headerFaults),
      status: null,
      clientClosed: false,
    };
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
      await respond({ protocol, req, res, request, record, signal: clientGone.signal, barrier, pieceChars });
    } catch (error) {
      if (clientGone.signal.aborted) return;
      throw error;
    }
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
    // Anthropic's SDK sends its key as `x-api-key`, OpenAI's as a bearer token; either is accepted.
    const protocol = path === '/v1/messages' ? ANTHROPIC_PROTOCOL : OPENAI_PROTOCOL;
    if (
      options.apiKey &&
      path?.startsWith('/v1/') &&
      req.headers.authorization !== `Bearer ${options.apiKey}` &&
      req.headers['x-api-key'] !== options.apiKey
    ) {
      return sendBody(res, 401, protocol.errorBody(401));
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
      return sendBody(res, 400, protocol.errorBody(400, 'The request body is not valid JSON.'));
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      return handleModelRequest(OPENAI_PROTOCOL, req, res, body);
    }
    if (req.method === 'POST' && path === '/v1/messages') {
      return handleModelRequest(ANTHROPIC_PROTOCOL, req, res, body);
    }
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
    origin: `http://${host}:${address.port}`,
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
