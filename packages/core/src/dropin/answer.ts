/** What a provider's answer becomes: the assistant message Compactor stores, and what the client will echo. */
import type { Usage } from '../model';
import type { AppendMessageInput } from './elements';

export interface DropInAnswer {
  /**
   * The assistant message: text, reasoning, tool parts `pending` (the next request's tool results
   * complete them), `finish` and `usage`. No `id`: it is {@link dropInMessageId} of the position
   * and chain hash the echo takes in the conversation, which only the caller knows.
   */
  message: AppendMessageInput;
  /** The canonical form of the message the client will send back: hashed into the chain. */
  echo: unknown;
  usage: Usage | null;
}

/** A count from a provider's usage report: a non-negative integer, or 0 when absent or odd. */
export function reportedCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}
