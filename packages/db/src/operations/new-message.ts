import type { Finish, MessageError, Part, Role, Usage } from '@compactor/core';
import type { MediaObjectInput } from '../media/references';

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
  /** The bytes its file parts refer to (`compactor-media:` URLs), stored before the message is. */
  media?: MediaObjectInput[];
}
