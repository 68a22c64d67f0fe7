/**
 * Stand-ins for the pure drop-in types of `@compactor/core` (packages/core/src/dropin) until they
 * land; this file goes when they do, and conversation.ts imports them from core.
 */
import type { Finish, Usage } from '@compactor/core';
import type { PartInput } from '@compactor/contract';

/** One client message of a drop-in request, in canonical form with the writes it implies. */
export type ConversationElement =
  | {
      kind: 'message';
      role: 'user' | 'assistant' | 'system';
      parts: PartInput[];
      metadata: Record<string, unknown>;
      canonical: unknown;
    }
  | {
      kind: 'tool-results';
      results: { callId: string; output?: string; error?: string }[];
      canonical: unknown;
    };

/** An upstream answer as one stored assistant message, and the element the client will echo. */
export interface DropInAnswer {
  parts: PartInput[];
  finish: Finish | null;
  usage: Usage | null;
  metadata: Record<string, unknown>;
  echo: ConversationElement;
}
