import type { Part } from '@compactor/core';
import { findMessage, listPartsOfMessages, partFromRow, type Db } from '@compactor/db';
import type { PartInput } from '@compactor/contract';

/**
 * A PATCH may omit a tool call's `input` when it only reports the result; the stored input is
 * used then, so the part's token count stays right.
 */
export async function withStoredToolInputs(
  db: Db,
  sessionPk: number,
  messageId: string,
  parts: PartInput[] | undefined,
): Promise<PartInput[]> {
  if (!parts?.some((p) => p.type === 'tool' && p.input === undefined)) return parts ?? [];
  const message = await findMessage(db, sessionPk, messageId);
  if (!message) return parts;
  const stored = new Map(
    (await listPartsOfMessages(db, [message.pk]))
      .map(partFromRow)
      .flatMap((p) => (p.type === 'tool' ? [[p.callId, p.input] as const] : [])),
  );
  return parts.map((p) =>
    p.type === 'tool' && p.input === undefined ? { ...p, input: stored.get(p.callId) } : p,
  );
}

/** The call ids of a PATCH's tool parts. */
export function toolCallIds(parts: readonly Part[]): Set<string> {
  return new Set(parts.flatMap((p) => (p.type === 'tool' ? [p.callId] : [])));
}
