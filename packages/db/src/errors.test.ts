import { DrizzleQueryError } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DatabaseBreakerOpenError, isDatabaseUnavailable, rootCause, safeErrorMessage } from './errors';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });
const wrapped = (cause: Error) =>
  new DrizzleQueryError('insert into messages values ($1)', ['SECRET user text'], cause);

describe('safeErrorMessage', () => {
  it("keeps a driver error's own message and drops the SQL parameters drizzle adds", () => {
    const error = wrapped(pgError('57P01', 'terminating connection due to administrator command'));
    expect(error.message).toContain('SECRET');
    expect(rootCause(error)).toBe(error.cause);
    expect(safeErrorMessage(error)).toBe('terminating connection due to administrator command');
  });

  it('bounds long messages', () => {
    expect(safeErrorMessage(new Error('x'.repeat(2_000)))).toHaveLength(501);
  });
});

describe('isDatabaseUnavailable', () => {
  it("counts the breaker's refusal, as thrown and as drizzle wraps it", () => {
    expect(isDatabaseUnavailable(new DatabaseBreakerOpenError())).toBe(true);
    expect(isDatabaseUnavailable(wrapped(new DatabaseBreakerOpenError()))).toBe(true);
    expect(isDatabaseUnavailable(wrapped(pgError('23505', 'duplicate key')))).toBe(false);
  });
});
