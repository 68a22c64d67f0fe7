import type http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Barrier } from './barrier';
import { answerRequest } from './completions';
import type { StubRequest } from './conversation';
import { toolPairing } from './conversation';
import { sendBody } from './http-io';
import type { WireProtocol } from './protocols';
import type { RecordedRequest } from './recorded-request';

/** One model request being answered, with what the server lends it. */
export interface Exchange {
  protocol: WireProtocol;
  req: http.IncomingMessage;
  res: http.ServerResponse;
  request: StubRequest;
  record: RecordedRequest;
  /** Aborted when the client goes away: waits stop. */
  signal: AbortSignal;
  barrier: Barrier;
  pieceChars: number;
}

/**
 * Answers one recorded request through its protocol, in this order: tool pairing and context
 * window (providers check both before queueing), barrier, latency, drop before response, status,
 * then the (possibly faulty) answer.
 */
export async function respond(exchange: Exchange): Promise<void> {
  const { protocol, req, res, request, record, signal, barrier } = exchange;
  const faults = record.faults;
  const maxTokens = record.maxTokens ?? 4096;
  // Both providers refuse a tool call without its result right after it (and a result without its call).
  const pairing = toolPairing(request.messages);
  if (pairing.unansweredCalls.length > 0 || pairing.orphanResults.length > 0) {
    record.status = 400;
    return sendBody(res, 400, protocol.errorBody(400, protocol.pairingMessage(pairing)));
  }
  // Providers check the prompt length before queueing for generation: this error comes fast.
  if (faults.contextWindow !== null && record.promptTokens + maxTokens > faults.contextWindow) {
    record.status = 400;
    return sendBody(
      res,
      400,
      protocol.contextErrorBody(faults.contextWindow, record.promptTokens, maxTokens),
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
    return sendBody(res, faults.status, protocol.errorBody(faults.status), headers);
  }

  const answer = answerRequest(request, {
    fault: faults.output,
    maxTokens,
    agentSteps: faults.agentSteps,
    callIdPrefix: protocol.callIdPrefix,
  });
  record.status = 200;
  protocol.write(res, {
    id: `${protocol.answerIdPrefix}${record.index}`,
    request,
    answer,
    promptTokens: record.promptTokens,
    faults,
    pieceChars: exchange.pieceChars,
  });
}
