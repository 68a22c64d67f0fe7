/**
 * The "Events" section of docs/API.md: each session event type's `data` fields, read from
 * @compactor/contract's `SESSION_EVENT_DATA` (the payloads workers and the API publish), so the
 * page cannot drift from what producers must send and clients parse.
 */
import { z } from 'zod';
import { SESSION_EVENT_DATA, SESSION_EVENT_TYPES } from '@compactor/contract';

type Schema = Record<string, unknown>;
type TypeOf = (schema: Schema) => string;

/** What each event says, by type. */
const EVENT_NOTES: Record<(typeof SESSION_EVENT_TYPES)[number], string> = {
  'compaction.requested': 'A compaction was written and is about to be queued.',
  'compaction.started': 'A worker claimed it; `attempt` counts claims (1 for the first try).',
  'compaction.step': 'The attempt entered a step.',
  'compaction.completed': 'It completed: the context view’s sizes before and after, and the boundary.',
  'compaction.failed': 'It ended `failed` (the compaction’s record holds the message).',
  'compaction.skipped': 'There was nothing to compact.',
  'compaction.reverted':
    'A client reverted it (`POST /v1/compactions/{id}/revert`): the view before it is served again; its size, and the compaction that defines it.',
  'session.compacted': 'What a client needs to go on: the sizes again, and what to do next.',
  'prune.completed': 'A prune job marked `parts` tool outputs (`tokens` of them) as pruned.',
  'prune.skipped':
    'A finished turn’s prune waited: the prompt cache is warm and the prune would not repay it (`pruning.cacheAware`).',
  'session.deleted': 'The last event of a deleted session: the stream ends after it.',
  'task.started':
    'A sub-agent or background task call was recorded (docs/TASKS.md): its call id, tool and status.',
  'task.finished':
    'A task’s result arrived; one that landed after a compaction covered its call was delivered as a `<task-notification>` message.',
};

/** A field's type: nested objects spelled out (`{ code: string } | null`), table-safe. */
function typeCell(schema: Schema, typeOf: TypeOf): string {
  const spelled = (s: Schema): string => {
    const properties = s['properties'] as Record<string, Schema> | undefined;
    if (properties) {
      return `{ ${Object.entries(properties)
        .map(([name, p]) => `${name}: ${spelled(p)}`)
        .join(', ')} }`;
    }
    const options = s['anyOf'] ?? s['oneOf'];
    if (Array.isArray(options)) return options.map((o) => spelled(o as Schema)).join(' | ');
    return typeOf(s).replace(` ${Number.MIN_SAFE_INTEGER}…${Number.MAX_SAFE_INTEGER}`, '');
  };
  return spelled(schema).replace(/\|/g, '\\|');
}

/** The section's lines (markdown, formatted later with the rest of the page). */
export function eventsSection(typeOf: TypeOf): string[] {
  const lines = [
    '## Events',
    '',
    '`GET /v1/sessions/{id}/events` sends each event as `event: <type>` and',
    '`data: {"type","sessionId","compactionId","at","data"}`. `compactionId` is the compaction’s id for',
    'the `compaction.*` events and `session.compacted`, null for `prune.*`, `task.*` and `session.deleted`.',
    'Each type’s `data`:',
    '',
  ];
  for (const type of SESSION_EVENT_TYPES) {
    const json = z.toJSONSchema(SESSION_EVENT_DATA[type], { io: 'output' }) as Schema;
    const properties = (json['properties'] ?? {}) as Record<string, Schema>;
    const required = new Set((json['required'] as string[] | undefined) ?? []);
    lines.push(`### \`${type}\``, '', EVENT_NOTES[type], '');
    if (Object.keys(properties).length === 0) {
      lines.push('`data`: `{}`.', '');
      continue;
    }
    lines.push('| field | type | required | |', '| --- | --- | --- | --- |');
    for (const [name, property] of Object.entries(properties)) {
      const description = String(property['description'] ?? '').replace(/\|/g, '\\|');
      lines.push(
        `| \`${name}\` | ${typeCell(property, typeOf)} | ${required.has(name) ? 'yes' : ''} | ${description} |`,
      );
    }
    lines.push('');
  }
  return lines;
}
