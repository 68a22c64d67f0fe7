/**
 * What an append refuses about tool calls: a result posted as a new message for a call stored
 * unfinished, or the same unfinished call posted again (PATCH that message instead). The append
 * (./append-messages.ts) and the PATCH (./patch-message.ts) both check it.
 */
import type { ToolPart } from '@compactor/core';
import { canonicalJson } from '../hashing';
import { UnfinishedCallConflictError, type ConflictError } from '../errors';
import type { UnfinishedCall } from '../queries/append-batch';
import type { NewMessage } from './new-message';

export type BatchCall = { messageId: string; part: ToolPart };

export function toolCallsOf(batch: NewMessage[]): BatchCall[] {
  return batch.flatMap((m) =>
    m.parts.flatMap((part) => (part.type === 'tool' ? [{ messageId: m.id, part }] : [])),
  );
}

/**
 * A tool part carries its call and its result. A client that stored a call as pending or
 * running must finish it with PATCH on that message; a part of a new message under the same id
 * and tool that carries a result (completed or error) would be a second, result-only copy of
 * it, whatever its arguments say (a client reporting a result often omits them): stored, the
 * result would sit under a renamed id and the real call would render as interrupted. That shape
 * is refused with a pointer to PATCH. So is the same call (id, tool and arguments) posted
 * unfinished again. A call under a reused id with another tool, or unfinished with other
 * arguments, is a different call (some providers number calls `call_0`, `call_1` … in every
 * turn) and is accepted: the renderer keeps ids unique. Such a provider finishes (PATCHes) or
 * fails an abandoned call before reusing its id for a result. `stored`: the calls stored
 * unfinished under the batch's call ids.
 */
export function checkDeferredToolResults(calls: BatchCall[], stored: UnfinishedCall[]): void {
  const own = ownDeferredResult(calls);
  if (own) throw own;
  for (const { part } of calls) {
    const match = stored.find((s) => s.callId === part.callId && deferredResultOf(s, part));
    if (match) throw deferredResultConflict(match.callId, match.messageId);
  }
}

/** A batch that posts a call unfinished and then the same call again: the conflict, or null. */
export function ownDeferredResult(calls: BatchCall[]): ConflictError | null {
  const unfinished = new Map<string, { messageId: string; tool: string; input: unknown }>();
  for (const { messageId, part } of calls) {
    const earlier = unfinished.get(part.callId);
    if (earlier && deferredResultOf(earlier, part))
      return deferredResultConflict(part.callId, earlier.messageId);
    if (part.status === 'pending' || part.status === 'running') {
      unfinished.set(part.callId, { messageId, tool: part.tool, input: part.input });
    }
  }
  return null;
}

/**
 * Whether `part` (same call id) is another copy of the unfinished call `open`: the same tool,
 * and a result for it or the same arguments.
 */
function deferredResultOf(open: { tool: string; input: unknown }, part: ToolPart): boolean {
  if (open.tool !== part.tool) return false;
  if (part.status === 'completed' || part.status === 'error') return true;
  return canonicalJson(open.input ?? {}) === canonicalJson(part.input ?? {});
}

/** The conflict of re-posting a still-unfinished tool call: it names the message to update instead. */
export function deferredResultConflict(callId: string, messageId: string): ConflictError {
  return new UnfinishedCallConflictError(callId, messageId);
}
