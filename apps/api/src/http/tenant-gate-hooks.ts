import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TenantRequestsQueued, type Pass, type TenantGate } from './tenant-gate';
import { UnparsedBody } from './unparsed-body';

/**
 * Routes that spend their life waiting on something else: an event stream lives as long as its
 * client listens (its tenant's cap on open streams bounds them), and a drop-in request as long as
 * the upstream provider answers, seconds, which would leave a tenant's agents a turn or two a
 * second; their statements still take the pool's turns.
 */
const WAITING_ROUTES = new Set([
  'GET /v1/sessions/:id/events',
  'POST /v1/chat/completions',
  'POST /v1/messages',
]);

/**
 * Requests that do not take a turn: those of {@link WAITING_ROUTES}, and a large append, bounded
 * by the process's large-append slots, its body parsed in a worker thread off the event loop.
 */
function takesNoTurn(request: FastifyRequest): boolean {
  if (WAITING_ROUTES.has(`${request.method} ${request.routeOptions.url ?? ''}`)) return true;
  return request.body instanceof UnparsedBody;
}

/** Writes that go through the session's write queue: one at a time per session (the gate's lane). */
function laneOf(request: FastifyRequest): string | undefined {
  const route = request.routeOptions.url ?? '';
  const writesMessages =
    (request.method === 'POST' && route === '/v1/sessions/:id/messages') ||
    (request.method === 'PATCH' && route === '/v1/sessions/:id/messages/:messageId');
  return writesMessages ? (request.params as { id: string }).id : undefined;
}

/**
 * Admits each tenant's requests through a {@link TenantGate} once their body is read (a slow
 * upload holds no turn) and before their handler runs; the turn is given back as the answer is
 * sent (the handler's work is done), or when the response ends, whichever comes first. Register it
 * before the hook that sets the tenant's async context, so the handler still runs inside that.
 * `onQueueFull` hears of each request refused because its tenant's queue was full (a metric).
 */
export function admitTenantsInTurn(app: FastifyInstance, gate: TenantGate, onQueueFull?: () => void): void {
  const passes = new WeakMap<FastifyRequest, Pass>();
  const leave = (request: FastifyRequest) => {
    passes.get(request)?.leave();
    passes.delete(request);
  };

  app.addHook('preHandler', (request, reply, done) => {
    if (!request.tenantId || takesNoTurn(request)) return done();
    gate.enter(request.tenantId, laneOf(request)).then(
      (pass) => {
        // Answered while it waited (a timeout): there is no handler to come and leave.
        if (reply.sent) return pass.leave();
        passes.set(request, pass);
        done();
      },
      (error: Error) => {
        if (error instanceof TenantRequestsQueued) onQueueFull?.();
        done(error);
      },
    );
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    leave(request);
    done(null, payload);
  });
  app.addHook('onResponse', (request, _reply, done) => {
    leave(request);
    done();
  });
}
