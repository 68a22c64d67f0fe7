import { describeImplausibleUsage, implausibleUsage, type UsagePeaks } from '@compactor/core';
import { InvalidInput } from './errors';

/**
 * Refuses a write whose usage reports no turn of the session's model can have made (core
 * `implausibleUsage`: a prompt or output over ten context windows), before anything is stored:
 * the refusal names the message's usage, the numbers and the window. `pathOf` names the report in
 * the body (`/messages/3/usage` for an append, `/usage` for a finished turn).
 */
export function checkUsageReports(
  peaks: UsagePeaks,
  contextWindow: number,
  pathOf: (index: number) => string,
): void {
  const found = implausibleUsage(peaks, contextWindow);
  if (found === null) return;
  throw InvalidInput.atPointers('body', [
    { instancePath: pathOf(found.index), message: describeImplausibleUsage(found) },
  ]);
}

/** Where an append's report `index` is in its body. */
export const appendedUsagePath = (index: number) => `/messages/${index}/usage`;
