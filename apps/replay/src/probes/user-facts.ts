/**
 * What a user told the agent, read from the transcript: the first goal, explicit constraints
 * (sentences with must, never, do not, don't, always), and the latest request. The probes check
 * that a compacted context still carries them.
 */
import type { MessageInput } from '@compactor/db';

/** The cue words that make a sentence a constraint, as the issue and the users phrase them. */
export const CONSTRAINT_CUE = /\b(must|never|do not|don't|always)\b/i;
/** Longer "sentences" are pasted logs or code, not something a user asked for. */
const MAX_CONSTRAINT_CHARS = 300;
/** The goal probed is the first request's opening, not a whole pasted specification. */
const GOAL_CHARS = 180;

export function userText(message: MessageInput): string {
  return message.role !== 'user'
    ? ''
    : message.parts
        .map((p) => (p.type === 'text' ? p.text : ''))
        .join('\n')
        .trim();
}

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Cut at a word boundary to at most `max` characters. */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return space > max / 2 ? cut.slice(0, space) : cut;
}

/** The first user message's opening (its first sentences, up to {@link GOAL_CHARS}). */
export function firstGoal(messages: readonly MessageInput[]): { index: number; text: string } | null {
  const index = messages.findIndex((m) => userText(m) !== '');
  return index === -1 ? null : { index, text: clip(userText(messages[index]!), GOAL_CHARS) };
}

export interface Constraint {
  /** Index of the user message that stated it. */
  index: number;
  text: string;
  /** The cue words in it, lower case (`never`, `do not`): a summary that drops them lost it. */
  cues: string[];
}

export function constraints(messages: readonly MessageInput[]): Constraint[] {
  const found: Constraint[] = [];
  messages.forEach((message, index) => {
    for (const sentence of sentences(userText(message))) {
      if (sentence.length > MAX_CONSTRAINT_CHARS || !CONSTRAINT_CUE.test(sentence)) continue;
      const cues = [...new Set(sentence.match(new RegExp(CONSTRAINT_CUE, 'gi')) ?? [])];
      // "don't" is matched as "do not" (mentions.ts normalises both spellings alike).
      found.push({
        index,
        text: sentence,
        cues: cues.map((c) => (c.toLowerCase() === "don't" ? 'do not' : c.toLowerCase())),
      });
    }
  });
  return found;
}

/** The last user message with text, among the first `upTo` messages. */
export function latestRequest(
  messages: readonly MessageInput[],
  upTo = messages.length,
): { index: number; text: string } | null {
  for (let i = Math.min(upTo, messages.length) - 1; i >= 0; i--) {
    const text = userText(messages[i]!);
    if (text !== '') return { index: i, text };
  }
  return null;
}
