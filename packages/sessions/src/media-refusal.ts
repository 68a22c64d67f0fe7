import { MediaRejected } from '@compactor/core';
import { InvalidInput } from './errors';

/**
 * Media refused while a batch was counted (a `data:` URL whose image header is unreadable or
 * declares a size no provider takes) as the 400 the validator would have answered, at the part's
 * path in the body; any other error as it was.
 */
export function asInputRefusal(error: unknown): unknown {
  if (!(error instanceof MediaRejected)) return error;
  const path = ['body', ...error.path].join('.');
  return InvalidInput.ofIssues([{ path, message: error.message }]);
}

/** `promise`, its media refusal a 400 (see {@link asInputRefusal}). */
export async function refusingMedia<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    throw asInputRefusal(error);
  }
}
