import type { Finish, MessageError, Part, Role, Usage } from '@compactor/core';
import type { NewMessageRow } from '../queries/messages';
import { usageToColumns } from '../mappers';

/** A message ready to store: parts already token-counted, content already hashed. */
export interface NewMessage {
  id: string;
  role: Role;
  parts: Part[];
  finish: Finish | null;
  error: MessageError | null;
  usage: Usage | null;
  createdAt: Date;
  metadata: Record<string, unknown>;
  /** Hash of the message as the client posted it; re-posts must match. */
  contentHash: string;
  summary?: boolean;
  compactionId?: string | null;
}

/** The `messages` row of a prepared message at `seq`; its parts are written separately (`partToRow`). */
export function messageToRow(message: NewMessage, sessionPk: number, seq: number): NewMessageRow {
  return {
    sessionPk,
    seq,
    id: message.id,
    role: message.role,
    finish: message.finish,
    error: message.error,
    ...usageToColumns(message.usage),
    metadata: message.metadata,
    summary: message.summary ?? false,
    compactionId: message.compactionId ?? null,
    contentHash: message.contentHash,
    createdAt: message.createdAt,
  };
}
