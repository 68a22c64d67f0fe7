/**
 * The LLM-facing context of a session: the reference the SQL context view is checked against.
 *
 * Rule (DESIGN.md, "The boundary"): take the latest **completed** compaction by `finishedAt`.
 * Pinned system messages it hid come first, then its summary messages in `summaryMessageIds`
 * order, then every non-summary message with `seq >= boundarySeq`, in seq order. Summary
 * messages of any other compaction are hidden. Pending, running, failed and skipped compactions
 * change nothing. With no completed compaction, every non-summary message is shown. Then each
 * message is rendered for the model: a pruned tool output reads {@link prunedOutputMarker},
 * an unfinished tool call gets the error result {@link INTERRUPTED_TOOL_RESULT}.
 */
import {
  INTERRUPTED_TOOL_RESULT,
  prunedOutputMarker,
  type CompactionBoundary,
  type Message,
  type ToolPart,
} from './model';
import { INTERRUPTED_TOOL_RESULT_TOKENS, messageTokens, prunedOutputMarkerTokens } from './tokens';

/**
 * A pinned message (policy `pinSystemMessages`): a system message the client stored (role
 * `system`, `summary = false`). A compaction's own system-style summary is not pinned: it is
 * replaced by the next one. An imported summary that is an unflagged system message would be
 * pinned too, so import such summaries with `summary: true`.
 */
export function isPinnedMessage(message: Message): boolean {
  return message.role === 'system' && !message.summary;
}

/** The context view's answer (`GET /v1/sessions/:id/context?format=native`). */
export interface AssembledContext {
  messages: Message[];
  /** The compaction whose boundary applies, or `null` when none has completed. */
  compactionId: string | null;
  boundarySeq: number | null;
  /** Tokens of the rendered messages ({@link messageTokens}: stored counts, placeholders for pruned outputs). */
  tokens: number;
}

/**
 * The compaction that defines the context: completed, with the latest `finishedAt` (compared as
 * instants; on a tie the later one in `compactions` wins). `undefined` when none completed.
 */
export function latestCompletedCompaction(
  compactions: readonly CompactionBoundary[],
): CompactionBoundary | undefined {
  let latest: CompactionBoundary | undefined;
  let latestTime = -Infinity;
  for (const compaction of compactions) {
    if (compaction.status !== 'completed') continue;
    const parsed = compaction.finishedAt === null ? Number.NaN : Date.parse(compaction.finishedAt);
    const time = Number.isNaN(parsed) ? -Infinity : parsed;
    if (latest === undefined || time >= latestTime) {
      latest = compaction;
      latestTime = time;
    }
  }
  return latest;
}

/**
 * A tool part as the model sees it. Pending or running: status `error` with the interrupted text,
 * since providers reject a call without a result. Pruned (`compactedAt` set): output replaced by
 * the marker naming its call, tokens reduced by the output's and increased by the marker's. Anything
 * else is returned unchanged. Idempotent.
 */
export function renderToolPart(part: ToolPart): ToolPart {
  if (part.status === 'pending' || part.status === 'running') {
    return {
      ...part,
      status: 'error',
      error: INTERRUPTED_TOOL_RESULT,
      // Nothing to prune on a call without output; keeping the mark would count a placeholder.
      compactedAt: null,
      tokens: part.tokens + INTERRUPTED_TOOL_RESULT_TOKENS,
    };
  }
  if (part.compactedAt !== null) {
    return {
      ...part,
      output: prunedOutputMarker(part.callId),
      tokens: Math.max(0, part.tokens - part.outputTokens) + prunedOutputMarkerTokens(part.callId),
      outputTokens: prunedOutputMarkerTokens(part.callId),
    };
  }
  return part;
}

/** A message as the model sees it: its tool parts rendered by {@link renderToolPart}. */
export function renderMessage(message: Message): Message {
  if (!message.parts.some((part) => part.type === 'tool')) return message;
  return {
    ...message,
    parts: message.parts.map((part) => (part.type === 'tool' ? renderToolPart(part) : part)),
  };
}

/** Switches for {@link assembleContext}, taken from the session's policy. */
export interface AssembleOptions {
  /** The session policy's `pinSystemMessages` (default `true`). */
  pinSystemMessages?: boolean;
}

/**
 * The context the model should see next. `messages` is the session's whole stored history in any
 * order (it is sorted by seq here); `compactions` its compactions in any status.
 *
 * With pinning (the default), the system messages the boundary would hide ({@link isPinnedMessage},
 * `seq < boundarySeq`) come first, in seq order, so the session's instructions survive every
 * compaction; pinned messages from the boundary on stay where they are among the kept messages,
 * so nothing that was already visible moves.
 *
 * A completed compaction with `boundarySeq: null` kept nothing of the range it covered: only
 * messages with a seq above its summary messages are shown (none if it wrote no summary). Messages
 * appended while it ran have lower seqs than its summary, so finalize should write a numeric
 * boundary (the first seq after the covered range) whenever anything may have been appended.
 */
export function assembleContext(
  messages: readonly Message[],
  compactions: readonly CompactionBoundary[],
  options: AssembleOptions = {},
): AssembledContext {
  const bySeq = [...messages].sort((a, b) => a.seq - b.seq);
  const compaction = latestCompletedCompaction(compactions);

  let visible: Message[];
  if (compaction === undefined) {
    visible = bySeq.filter((message) => !message.summary);
  } else {
    const byId = new Map(bySeq.map((message) => [message.id, message]));
    const summaries = compaction.summaryMessageIds
      .map((id) => byId.get(id))
      .filter((message) => message !== undefined);
    const afterSummaries = summaries.length === 0 ? Infinity : Math.max(...summaries.map((m) => m.seq)) + 1;
    const firstKept = compaction.boundarySeq ?? afterSummaries;
    const pinned =
      (options.pinSystemMessages ?? true)
        ? bySeq.filter((message) => isPinnedMessage(message) && message.seq < firstKept)
        : [];
    visible = [
      ...pinned,
      ...summaries,
      ...bySeq.filter((message) => !message.summary && message.seq >= firstKept),
    ];
  }

  const rendered = visible.map(renderMessage);
  return {
    messages: rendered,
    compactionId: compaction?.id ?? null,
    boundarySeq: compaction?.boundarySeq ?? null,
    tokens: rendered.reduce((total, message) => total + messageTokens(message), 0),
  };
}
