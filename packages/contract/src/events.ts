/** `GET /v1/sessions/:id/events`: the session's progress as Server-Sent Events. */
import { z } from 'zod';

/** Every event type a session's stream carries (the API checks this equals @compactor/workflow's list). */
export const SESSION_EVENT_TYPES = [
  'compaction.requested',
  'compaction.started',
  'compaction.step',
  'compaction.completed',
  'compaction.failed',
  'compaction.skipped',
  'session.compacted',
  'prune.completed',
  'session.deleted',
] as const;
/** One of {@link SESSION_EVENT_TYPES}. */
export type SessionEventType = (typeof SESSION_EVENT_TYPES)[number];

/**
 * The last event of a session's stream: the session was deleted (`compactionId` null, `data`
 * empty). The API ends every open stream of the session after it; there is nothing to reconnect to.
 */
export const SESSION_DELETED_EVENT = 'session.deleted' satisfies SessionEventType;

const eventExample = {
  type: 'compaction.completed' as const,
  sessionId: 'support-42',
  compactionId: 'cmp_01JH2Q4V7K3M5N8P9R0S',
  at: '2026-01-05T10:02:07.800Z',
  data: { tokensBefore: 96_512, tokensAfter: 11_204, fallback: null },
};

/**
 * The `data:` of one event block (`event: <type>`): counts and labels, never message text, except
 * `session.compacted`'s `continueWith` (the message to append so the agent goes on).
 */
export const SessionEventPayload = z
  .object({
    type: z.enum(SESSION_EVENT_TYPES),
    sessionId: z.string(),
    compactionId: z.string().nullable().describe('null for a prune job and for session.deleted'),
    at: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'SessionEvent', examples: [eventExample] });
/** One session event as a client receives it. */
export type SessionEventMessage = z.output<typeof SessionEventPayload>;

/** The stream as it goes over the wire: `: connected`, event blocks, `: keepalive` comments. */
export const EventStreamText = z
  .string()
  .describe('text/event-stream')
  .meta({
    examples: [
      `: connected\n\nevent: ${eventExample.type}\ndata: ${JSON.stringify(eventExample)}\n\n: keepalive\n\n`,
    ],
  });
