import { isDeepStrictEqual } from 'node:util';
import { SessionEventPayload } from '@compactor/contract';
import type { SessionEvent, SessionEventPublisher } from '../session-events';

/**
 * Why `event` is not what the contract documents, or null when it is: its wire form (what the
 * API's SSE route sends: no session key, no id) must parse with `SessionEventPayload` and lose
 * nothing to it (a field the contract does not name would be dropped by every typed client).
 */
export function contractIssue(event: SessionEvent): string | null {
  const wire = {
    type: event.type,
    sessionId: event.sessionId,
    compactionId: event.compactionId,
    at: event.at,
    data: event.data,
  };
  const parsed = SessionEventPayload.safeParse(wire);
  if (!parsed.success) return `${event.type}: ${parsed.error.message}`;
  if (!isDeepStrictEqual(parsed.data, wire)) {
    return `${event.type}: fields the contract does not name in ${JSON.stringify(event.data)}`;
  }
  return null;
}

/**
 * A publisher that checks every event against the contract and keeps it (`published`), with
 * what did not match (`issues`); `inner`, when given, publishes it too.
 */
export function contractCheckedEvents(inner?: SessionEventPublisher): SessionEventPublisher & {
  readonly published: SessionEvent[];
  readonly issues: string[];
} {
  const published: SessionEvent[] = [];
  const issues: string[] = [];
  return {
    published,
    issues,
    async publish(event) {
      published.push(event);
      const issue = contractIssue(event);
      if (issue) issues.push(issue);
      await inner?.publish(event);
    },
  };
}
