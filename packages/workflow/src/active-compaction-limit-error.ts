/**
 * A compaction was not started: the session's tenant already has `limit` compactions pending or
 * running, and the session none to join. Callers decide what it means: a refusal to retry later
 * (a manual or overflow request), or a wait (`deferred`: the request asked to wait its turn and
 * is recorded, to be started when the tenant has room).
 */
export class ActiveCompactionLimitError extends Error {
  override readonly name = 'ActiveCompactionLimitError';
  constructor(
    readonly tenantId: string,
    readonly limit: number,
    readonly deferred = false,
  ) {
    super(
      `the tenant already has ${limit} active compactions (its limit)` +
        (deferred ? '; the compaction waits for room' : ''),
    );
  }
}
