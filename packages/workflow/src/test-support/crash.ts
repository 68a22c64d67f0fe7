import type { WorkflowResources } from '../resources';

/** A connection-level failure, as pg reports one: transient, so the queue would retry. */
export function connectionReset(): Error {
  return Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
}

/**
 * `resources` whose database loses its connection when a transaction or a pipelined round trip
 * takes one of its own from the pool (finalize's first step): an attempt that crashes there,
 * after its LLM call and its saved draft.
 */
export function crashingAtFinalize(resources: WorkflowResources): WorkflowResources {
  return {
    ...resources,
    db: new Proxy(resources.db, {
      get(target, property, receiver) {
        if (property === '$client') return { connect: async () => Promise.reject(connectionReset()) };
        return Reflect.get(target, property, receiver) as unknown;
      },
    }),
  };
}
