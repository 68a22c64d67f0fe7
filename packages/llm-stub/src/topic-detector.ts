import type { IndexedMessage } from './transcript';

/**
 * Topic-boundary answers from the cues the topic reference's prompt names: explicit switches ("now let's",
 * "moving on") are confident, context resets ("actually", "forget that") less so. The most recent
 * cue wins, as the prompt asks for the most recent shift. The summary covers what the request
 * names (`Summarize messages [0] to [K]`, core's request), boundary or not, and carries the
 * request's `<previous-summary>` over; a request that names nothing gets an empty summary.
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

/** What the request asks to summarise: messages `[0]` to `[through]`, and a previous summary to carry over. */
export interface TopicSummaryRequest {
  /** Last index to summarise; `null` when the request names no messages (then no summary). */
  through: number | null;
  previousSummary: string | null;
}

export function detectTopicBoundary(
  messages: readonly IndexedMessage[],
  request: TopicSummaryRequest = { through: null, previousSummary: null },
): TopicBoundaryAnswer {
  const summary =
    request.through === null ? '' : summarise(messages, request.through, request.previousSummary);
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
      summary,
    };
  }
  return { boundary_index: null, boundary_reason: 'No topic shift found.', confidence: 0, summary };
}

function summarise(
  messages: readonly IndexedMessage[],
  through: number,
  previousSummary: string | null,
): string {
  const covered = messages.filter((m) => m.index <= through);
  const firstUser = covered.find((m) => m.role === 'user');
  const lastAssistant = [...covered].reverse().find((m) => m.role === 'assistant');
  const parts = [];
  if (previousSummary) parts.push(`Earlier: ${clip(previousSummary, 400)}`);
  if (firstUser) parts.push(`The user asked: ${clip(firstUser.text, 240)}`);
  if (lastAssistant) parts.push(`The assistant last said: ${clip(lastAssistant.text, 240)}`);
  parts.push(`(${covered.length} earlier messages summarised.)`);
  return parts.join(' ');
}

const SUMMARY_RANGE = /Summari[sz]e messages \[0\] to \[(\d+)\]/;

/** The summary a detection prompt asks for (core's `buildTopicDetectionRequest` wording). */
export function readTopicSummaryRequest(prompt: string, previousSummary: string | null): TopicSummaryRequest {
  const through = SUMMARY_RANGE.exec(prompt)?.[1];
  return { through: through === undefined ? null : Number(through), previousSummary };
}
