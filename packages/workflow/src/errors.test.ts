import { DrizzleQueryError } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  InvalidSummaryError,
  LlmAbortedError,
  LlmFatalError,
  LlmRetryableError,
  ZERO_USAGE,
} from '@compactor/llm';
import { CompactionFailedError, isTransient, shouldRethrow } from './errors';

const pgError = (code: string | undefined, message: string) =>
  Object.assign(new Error(message), code ? { code } : {});
const wrapped = (cause: Error) =>
  new DrizzleQueryError('insert into messages values ($1)', ['SECRET user text'], cause);

describe('isTransient', () => {
  it.each([
    ['an LLM 429/5xx', new LlmRetryableError('rate limited', 'rate-limit'), true],
    ['a fatal LLM answer', new LlmFatalError('unauthorized'), false],
    ['an invalid summary', new InvalidSummaryError('empty', 2, { usage: ZERO_USAGE, costUsd: null }), false],
    ['a recorded failure', new CompactionFailedError('context_cannot_fit', 'no'), false],
    [
      'pg admin shutdown (pg_terminate_backend), wrapped by drizzle',
      wrapped(pgError('57P01', 'terminating connection')),
      true,
    ],
    ['a dropped socket, wrapped', wrapped(pgError(undefined, 'Connection terminated unexpectedly')), true],
    ['connection refused', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), true],
    ['too many connections', pgError('53300', 'sorry, too many clients already'), true],
    ['a constraint violation, wrapped', wrapped(pgError('23505', 'duplicate key')), false],
    ['a programming error', new TypeError('x is undefined'), false],
  ])('%s → %s', (_label, error, expected) => {
    expect(isTransient(error)).toBe(expected);
  });
});

describe('shouldRethrow: the one retry decision', () => {
  it('propagates cancellations always, transient failures unless it is the last attempt', () => {
    const transient = new LlmRetryableError('503', 'server');
    expect(shouldRethrow(new LlmAbortedError('stopped'), { lastAttempt: true })).toBe(true);
    expect(shouldRethrow(transient, { lastAttempt: false })).toBe(true);
    expect(shouldRethrow(transient, { lastAttempt: true })).toBe(false);
    expect(shouldRethrow(new LlmFatalError('401'), { lastAttempt: false })).toBe(false);
  });
});
