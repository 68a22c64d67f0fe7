/**
 * The media budget (`policy.media`): the newest images stay in the served context verbatim, at
 * most `keepImages` of them and `keepTokens` of their tokens; each older one is replaced by a
 * marker naming what it was (type, pixels and bytes, its message and the call before it, its
 * id). Images go first: a context over its window because of screenshots loses old screenshots
 * before any text is fitted, and a request keeps under the providers' per-request image limits
 * (Anthropic lowers its 8000-px limit to 2000 px past 20 images).
 */
import type { FilePart, Message, Part } from '../model';
import { estimateTokens } from '../tokens';
import { parseMediaReference } from './reference';

/** `policy.media`, resolved. */
export interface MediaBudget {
  /** The newest this many images are served as they are. */
  keepImages: number;
  /** And together at most this many tokens of them. */
  keepTokens: number;
}

/** The budget when a policy names none: Anthropic's 20 images per request at full size. */
export const DEFAULT_MEDIA_BUDGET: Readonly<MediaBudget> = Object.freeze({
  keepImages: 20,
  keepTokens: 40_000,
});

/** A policy's media budget, its absent fields the defaults. */
export function mediaBudgetOf(policy: {
  media?: { keepImages?: number | undefined; keepTokens?: number | undefined } | undefined;
}): MediaBudget {
  return {
    keepImages: policy.media?.keepImages ?? DEFAULT_MEDIA_BUDGET.keepImages,
    keepTokens: policy.media?.keepTokens ?? DEFAULT_MEDIA_BUDGET.keepTokens,
  };
}

/** What {@link applyMediaBudget} did. */
export interface BudgetedMedia {
  messages: Message[];
  /** Images replaced by their marker. */
  elided: number;
  /** Tokens the replaced images cost, less their markers'. */
  savedTokens: number;
}

function isImage(part: Part): part is FilePart {
  return part.type === 'file' && part.mime.toLowerCase().startsWith('image/');
}

function kilobytes(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${(bytes / (1024 * 1024)).toFixed(1)} MB`
    : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

/** The text an image is shown as once the budget leaves it out. */
export function mediaMarker(part: FilePart, at: { messageId: string; callId: string | null }): string {
  const reference = parseMediaReference(part.url);
  const facts = [part.mime];
  if (reference?.width && reference.height) facts.push(`${reference.width}×${reference.height} px`);
  if (reference) facts.push(kilobytes(reference.bytes));
  const name = part.filename ? ` ${part.filename}` : '';
  const call = at.callId ? `, after call ${at.callId}` : '';
  const id = reference ? `; media id ${reference.sha256.slice(0, 16)}` : '';
  return `[Older image${name} not shown (${facts.join(', ')}), message ${at.messageId}${call}${id}]`;
}

/**
 * `messages` with every image past the budget (counting from the newest) replaced by a text part
 * holding its {@link mediaMarker}. Messages without such an image are returned as they are.
 */
export function applyMediaBudget(messages: readonly Message[], budget: MediaBudget): BudgetedMedia {
  let kept = 0;
  let keptTokens = 0;
  let elided = 0;
  let savedTokens = 0;
  const out = messages.slice();
  for (let m = out.length - 1; m >= 0; m--) {
    const message = out[m]!;
    if (!message.parts.some(isImage)) continue;
    const parts = message.parts.slice();
    for (let i = parts.length - 1; i >= 0; i--) {
      const part = parts[i]!;
      if (!isImage(part)) continue;
      if (kept < budget.keepImages && keptTokens + part.tokens <= budget.keepTokens) {
        kept += 1;
        keptTokens += part.tokens;
        continue;
      }
      const text = mediaMarker(part, { messageId: message.id, callId: callBefore(parts, i) });
      const tokens = estimateTokens(text);
      parts[i] = { type: 'text', text, tokens };
      elided += 1;
      savedTokens += part.tokens - tokens;
    }
    out[m] = { ...message, parts };
  }
  return { messages: elided === 0 ? (messages as Message[]) : out, elided, savedTokens };
}

/** The id of the tool call right before part `index` of a message, if one is. */
function callBefore(parts: readonly Part[], index: number): string | null {
  for (let i = index - 1; i >= 0; i--) {
    const part = parts[i]!;
    if (part.type === 'tool') return part.callId;
    if (part.type === 'text' && part.text.trim() !== '') return null;
  }
  return null;
}
