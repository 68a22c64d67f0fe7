/**
 * Media before text, at read time: while a view is over its budget, its images are left out
 * oldest first, each shown as its marker (budget.ts), before any tool output is cleared, any part
 * clamped or any message dropped (read-fit.ts). The newest image stays: it is the one the model
 * is most likely acting on, and the later steps go on from there.
 */
import type { Message } from '../model';
import { partTokens } from '../tokens';
import { imageMarkerPart, isImage } from './budget';

/** What {@link leaveOutOldestImages} did. */
export interface ImagesLeftOut {
  messages: Message[];
  /** Images replaced by their marker. */
  elided: number;
  /** `total` less what the markers saved. */
  total: number;
}

/**
 * `messages` (of a view counted at `total` tokens) with their oldest images replaced by markers
 * until the view fits `budgetTokens` or only the newest image is left. `skip` messages (pinned
 * ones) are never touched.
 */
export function leaveOutOldestImages(
  messages: readonly Message[],
  total: number,
  budgetTokens: number,
  skip: (message: Message) => boolean = () => false,
): ImagesLeftOut {
  const newest = newestImage(messages, skip);
  let remaining = total;
  let elided = 0;
  const out = messages.map((message, m) => {
    if (remaining <= budgetTokens || skip(message) || !message.parts.some(isImage)) return message;
    let parts = message.parts;
    for (let i = 0; i < message.parts.length && remaining > budgetTokens; i++) {
      const part = message.parts[i]!;
      if (!isImage(part) || (m === newest?.message && i === newest.part)) continue;
      const marker = imageMarkerPart(message, i);
      if (parts === message.parts) parts = message.parts.slice();
      parts[i] = marker;
      remaining -= partTokens(part) - marker.tokens;
      elided += 1;
    }
    return parts === message.parts ? message : { ...message, parts };
  });
  return { messages: elided === 0 ? [...messages] : out, elided, total: remaining };
}

/** Where the newest image of the messages (not in a `skip` one) is. */
function newestImage(
  messages: readonly Message[],
  skip: (message: Message) => boolean,
): { message: number; part: number } | null {
  for (let m = messages.length - 1; m >= 0; m--) {
    const message = messages[m]!;
    if (skip(message)) continue;
    for (let i = message.parts.length - 1; i >= 0; i--)
      if (isImage(message.parts[i]!)) return { message: m, part: i };
  }
  return null;
}
