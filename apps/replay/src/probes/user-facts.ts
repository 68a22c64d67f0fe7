/**
 * What a user told the agent, read from the transcript: the first goal, explicit constraints,
 * and the latest request. The probes check that a compacted context still carries them. They are
 * read as core reads them for the summary check: a user message's words are those its agent
 * harness did not write (core `userWords`: environment context, AGENTS.md, local-command blocks
 * and image notes are not requests), and its constraints are core's `constraintSentences`, so
 * the report measures what Compactor is meant to keep, not the harness's text.
 */
import { constraintSentences, userWords } from '@compactor/core';
import type { MessageInput } from '@compactor/db';

/** The cue words of a constraint sentence: a summary that drops them lost the constraint. */
export const CONSTRAINT_CUE = /\b(must|never|do not|don't|always|only|make sure)\b/i;
/** Longer "sentences" are pasted logs or code, not something a user asked for. */
const MAX_CONSTRAINT_CHARS = 300;
/** The goal probed is the first request's opening, not a whole pasted specification. */
const GOAL_CHARS = 180;

/** The user's own words in a message (`''` for other roles and for harness-only text). */
export function userText(message: MessageInput): string {
  return message.role !== 'user'
    ? ''
    : userWords(message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n'));
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
    for (const sentence of constraintSentences(userText(message))) {
      if (sentence.length > MAX_CONSTRAINT_CHARS) continue;
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
