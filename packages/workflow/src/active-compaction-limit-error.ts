/**
 * A compaction was not started: the session's tenant already has `limit` compactions pending or
 * running, and the session none to join. Callers decide what it means: a refusal to retry later
 * (a manual or overflow request), or nothing to do now (the auto trigger asks again later).
 */
export class ActiveCompactionLimitError extends Error {
  override readonly name = 'ActiveCompactionLimitError';
  constructor(
    readonly tenantId: string,
    readonly limit: number,
  ) {
    super(`the tenant already has ${limit} active compactions (its limit)`);
  }
}
