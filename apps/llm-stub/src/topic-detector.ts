import type { IndexedMessage } from './transcript';

/**
 * Topic-boundary answers from the cues seed 002's prompt names: explicit switches ("now let's",
 * "moving on") are confident, context resets ("actually", "forget that") less so. The most recent
 * cue wins, as the prompt asks for the most recent shift.
 */

interface Cue {
  pattern: RegExp;
  confidence: number;
}

const CUES: readonly Cue[] = [
  { pattern: /\bnow let'?s\b/i, confidence: 0.9 },
  { pattern: /\bmoving on\b/i, confidence: 0.9 },
  { pattern: /\blet'?s move on\b/i, confidence: 0.9 },
  { pattern: /\b(switching|switch) to\b/i, confidence: 0.8 },
  { pattern: /\bnew topic\b/i, confidence: 0.85 },
  { pattern: /\bforget (that|about that)\b/i, confidence: 0.7 },
  { pattern: /\blet'?s try something else\b/i, confidence: 0.7 },
  { pattern: /\bactually\b/i, confidence: 0.6 },
];

export interface TopicBoundaryAnswer {
  boundary_index: number | null;
  boundary_reason: string;
  confidence: number;
  summary: string;
}

const clip = (text: string, max: number): string => {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= max ? oneLine : `${oneLine.slice(0, max - 1)}…`;
};

export function detectTopicBoundary(messages: readonly IndexedMessage[]): TopicBoundaryAnswer {
  // The first message cannot start a *new* topic: there is nothing before it.
  for (const message of [...messages].reverse()) {
    if (message.role !== 'user' || message.index === messages[0]?.index) continue;
    const cue = CUES.find(({ pattern }) => pattern.test(message.text));
    if (!cue) continue;
    const phrase = cue.pattern.exec(message.text)?.[0] ?? '';
    return {
      boundary_index: message.index,
      boundary_reason: `User switched topic ("${phrase.toLowerCase()}"): ${clip(message.text, 120)}`,
      confidence: cue.confidence,
      summary: summariseBefore(messages.filter((m) => m.index < message.index)),
    };
  }
  return { boundary_index: null, boundary_reason: 'No topic shift found.', confidence: 0, summary: '' };
}

function summariseBefore(messages: readonly IndexedMessage[]): string {
  const firstUser = messages.find((m) => m.role === 'user');
  const lastAssistant = [...messages].reverse().find((m) => m.role === 'assistant');
  const parts = [];
  if (firstUser) parts.push(`The user asked: ${clip(firstUser.text, 240)}`);
  if (lastAssistant) parts.push(`The assistant last said: ${clip(lastAssistant.text, 240)}`);
  parts.push(`(${messages.length} earlier messages on this topic.)`);
  return parts.join(' ');
}
