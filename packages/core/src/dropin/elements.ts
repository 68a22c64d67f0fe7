/**
 * A drop-in request's message list as Compactor reads it: one element per client message, with
 * the canonical form its chain hash covers and the writes it implies.
 */
import type { MessageInput, PartInput } from '@compactor/contract';
import { chainDigest } from './chain-hash';

/** One message as an append writes it: an element of `AppendMessagesBody['messages']`, validated. */
export type AppendMessageInput = MessageInput;

/** A tool result the client sends, to be written on the tool part that holds its call. */
export interface ToolResultWrite {
  callId: string;
  /** The result text when the call succeeded (`completed`). */
  output: string | null;
  /** The error text when it failed (`error`); exactly one of `output` and `error` is set. */
  error: string | null;
  /** Images and documents the result holds: file parts naming this call (`callId`). */
  files?: PartInput[];
}

/** One client message (Anthropic: the `system` field counts as element 0 when present). */
export interface ConversationElement {
  /** Index in the request's element list. */
  position: number;
  role: 'system' | 'user' | 'assistant' | 'tool';
  /** What is hashed: the message without what clients change between turns without changing meaning. */
  canonical: unknown;
  /** `h[i] = sha256(h[i-1] bytes ‖ canonicalJson(canonical))` in hex; `h[-1]` is 32 zero bytes. */
  hash: string;
  /** The append this element implies (user, system, assistant), with id {@link dropInMessageId}. */
  message: AppendMessageInput | null;
  /** The tool results this element carries (Chat `role: "tool"`, Anthropic `tool_result` blocks). */
  toolResults: ToolResultWrite[];
}

/** An element before the chain is computed: what a protocol's reader produces per client message. */
export interface ElementDraft {
  role: ConversationElement['role'];
  canonical: unknown;
  /** The append without its id (the id depends on the chain hash). */
  message: Omit<AppendMessageInput, 'id'> | null;
  toolResults: ToolResultWrite[];
}

/**
 * The stored id of the message element `position` implies: the same request always gives the
 * same ids, so a retried request re-posts them (a no-op), and an edited one gives new ones.
 */
export function dropInMessageId(position: number, hash: string): string {
  return `dropin-${position}-${hash.slice(0, 16)}`;
}

/** The element `draft` is at `position`, after the element whose digest is `previous`. */
export function chainElement(
  position: number,
  draft: ElementDraft,
  previous: Uint8Array | null,
): { element: ConversationElement; digest: Buffer } {
  const digest = chainDigest(previous, draft.canonical);
  const hash = digest.toString('hex');
  const element: ConversationElement = {
    position,
    role: draft.role,
    canonical: draft.canonical,
    hash,
    message: draft.message && { id: dropInMessageId(position, hash), ...draft.message },
    toolResults: draft.toolResults,
  };
  return { element, digest };
}

/** Positions and chain hashes for drafts in request order; message ids follow from them. */
export function chainElements(drafts: readonly ElementDraft[]): ConversationElement[] {
  let previous: Buffer | null = null;
  return drafts.map((draft, position) => {
    const { element, digest } = chainElement(position, draft, previous);
    previous = digest;
    return element;
  });
}
