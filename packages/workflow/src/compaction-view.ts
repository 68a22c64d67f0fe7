import { assembleContext, type Message, type Policy } from '@compactor/core';
import { loadContextRows, type CompactionRow, type Db } from '@compactor/db';

/**
 * The stored context view a topic-mode compaction works on, whole (the other strategies read it
 * in windows: covered-history.ts): pinned system messages and the latest
 * completed compaction's summary first (core's order), then the kept messages up to
 * `coversThroughSeq` (the range fixed when the compaction started; messages appended since are
 * not compacted and land after the boundary). `latestCompleted`: the session's latest completed
 * compaction as the attempt's claim read it (looked up when not given). Parts are the stored
 * ones, not the rendered ones: prune selection and the estimate are defined on stored parts.
 */
export async function loadCoveredView(
  db: Db,
  sessionPk: number,
  coversThroughSeq: number,
  policy: Pick<Policy, 'pinSystemMessages'>,
  latestCompleted?: CompactionRow | null,
): Promise<Message[]> {
  const { pinSystemMessages } = policy;
  // The compaction being run is the session's only active one (a unique index), so no other can
  // complete meanwhile: the latest completed compaction its claim read is still the latest.
  const { messages, compaction } = await loadContextRows(db, sessionPk, {
    pinSystemMessages,
    ...(latestCompleted !== undefined ? { latestCompleted } : {}),
  });
  const ordered = assembleContext(messages, compaction ? [compaction] : [], { pinSystemMessages }).messages;
  const stored = new Map(messages.map((m) => [m.id, m]));
  return ordered.flatMap((m) => {
    const original = stored.get(m.id);
    return original && (original.summary || original.seq <= coversThroughSeq) ? [original] : [];
  });
}
