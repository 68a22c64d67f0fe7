/**
 * The media budget (`policy.media`): the newest images stay in the served context verbatim, at
 * most `keepImages` of them and `keepTokens` of their tokens; each older one is replaced by a
 * marker naming what it was (type, pixels and bytes, its message and the call before it, its
 * id). Images go first: a context over its window because of screenshots loses old screenshots
 * before any text is fitted, and a request keeps under the providers' per-request image limits
 * (Anthropic lowers its 8000-px limit to 2000 px past 20 images).
 */
import type { FilePart, Message, Part, TextPart } from '../model';
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

/**
 * The most of the usable input the kept images may take, whatever `keepTokens` says: a session
 * over its window because of images then loses old images, not its text (40,000 tokens of
 * screenshots would fill a 32k window on their own).
 */
export const MEDIA_SHARE_OF_USABLE = 0.5;

/**
 * A policy's media budget, its absent fields the defaults; with the session's `usable` input
 * (null: unlimited), `keepTokens` at most {@link MEDIA_SHARE_OF_USABLE} of it.
 */
export function mediaBudgetOf(
  policy: {
    media?: { keepImages?: number | undefined; keepTokens?: number | undefined } | undefined;
  },
  usable: number | null = null,
): MediaBudget {
  const keepTokens = policy.media?.keepTokens ?? DEFAULT_MEDIA_BUDGET.keepTokens;
  return {
    keepImages: policy.media?.keepImages ?? DEFAULT_MEDIA_BUDGET.keepImages,
    keepTokens:
      usable === null ? keepTokens : Math.min(keepTokens, Math.floor(usable * MEDIA_SHARE_OF_USABLE)),
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

/** Whether a part is an image (what the budget and the read-time fit leave out first). */
export function isImage(part: Part): part is FilePart {
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

/** The text part image `index` of `message` is shown as once it is left out (its {@link mediaMarker}). */
export function imageMarkerPart(message: Message, index: number): TextPart {
  const part = message.parts[index] as FilePart;
  // A tool result's image names its own call; any other the call right before it.
  const callId = part.callId ?? callBefore(message.parts, index);
  const text = mediaMarker(part, { messageId: message.id, callId });
  return { type: 'text', text, tokens: estimateTokens(text) };
}

/**
 * The budget's choice, image by image from the newest: keep it while fewer than `keepImages`
 * are kept and its tokens still fit `keepTokens` (a smaller older image may still fit after a
 * larger one did not).
 */
function budgetChooser(budget: MediaBudget): (tokens: number) => boolean {
  let kept = 0;
  let keptTokens = 0;
  return (tokens) => {
    if (kept >= budget.keepImages || keptTokens + tokens > budget.keepTokens) return false;
    kept += 1;
    keptTokens += tokens;
    return true;
  };
}

/**
 * `messages` with every image past the budget (counting from the newest) replaced by a text part
 * holding its {@link mediaMarker}. Messages without such an image are returned as they are.
 */
export function applyMediaBudget(messages: readonly Message[], budget: MediaBudget): BudgetedMedia {
  const keeps = budgetChooser(budget);
  let elided = 0;
  let savedTokens = 0;
  const out = messages.slice();
  for (let m = out.length - 1; m >= 0; m--) {
    const message = out[m]!;
    if (!message.parts.some(isImage)) continue;
    const parts = message.parts.slice();
    for (let i = parts.length - 1; i >= 0; i--) {
      const part = parts[i]!;
      if (!isImage(part) || keeps(part.tokens)) continue;
      parts[i] = imageMarkerPart(message, i);
      elided += 1;
      savedTokens += part.tokens - parts[i]!.tokens;
    }
    out[m] = { ...message, parts };
  }
  return { messages: elided === 0 ? (messages as Message[]) : out, elided, savedTokens };
}

/**
 * An image of a context view as the status reads it (db `contextTokenStats`): its part, where it
 * is, and the call before it, enough to write its marker without reading the messages.
 */
export interface ViewImage {
  seq: number;
  messageId: string;
  callId: string | null;
  part: FilePart;
}

/** What {@link mediaBudgetSavings} finds. */
export interface MediaSavings {
  elided: number;
  /** Tokens the budget takes off the view: the images left out, less their markers. */
  savedTokens: number;
  /** The part of it in messages after seq `afterSeq` (those a usage report did not measure). */
  savedAfter: number;
}

/**
 * The tokens {@link applyMediaBudget} would take off a view, from its images alone, newest
 * first (as the view orders them: by seq, then position): the status counts the context as it
 * is served without loading it.
 */
export function mediaBudgetSavings(
  imagesNewestFirst: readonly ViewImage[],
  budget: MediaBudget,
  afterSeq: number | null = null,
): MediaSavings {
  const keeps = budgetChooser(budget);
  const savings: MediaSavings = { elided: 0, savedTokens: 0, savedAfter: 0 };
  for (const image of imagesNewestFirst) {
    if (keeps(image.part.tokens)) continue;
    const marker = estimateTokens(mediaMarker(image.part, image));
    const saved = image.part.tokens - marker;
    savings.elided += 1;
    savings.savedTokens += saved;
    if (afterSeq !== null && image.seq > afterSeq) savings.savedAfter += saved;
  }
  return savings;
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
