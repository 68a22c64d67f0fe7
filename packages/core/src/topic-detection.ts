/**
 * Topic-boundary detection (seed 002): the request that asks an LLM where the current topic
 * started, and the lenient parsing of its JSON answer with a safe default.
 */
import { assertNever, type Message, type Part } from './model';
import { toolCallArguments } from './openai-format';

/** The seed's numbers: the newest 50 messages, each cut to 1,000 characters; a 500-token summary. */
export const TOPIC_DETECTION_DEFAULTS = {
  maxMessages: 50,
  maxCharsPerMessage: 1000,
  summaryBudgetTokens: 500,
} as const;

export interface TopicDetectionOptions {
  maxMessages?: number;
  maxCharsPerMessage?: number;
  /** Length the detector's summary should stay under (seed: `summary_budget_tokens`). */
  summaryBudgetTokens?: number;
}

/** Which messages of the session the request showed: request index `i` is session index `start + i`. */
export interface DetectionWindow {
  start: number;
  size: number;
}

export interface TopicDetectionRequest {
  system: string;
  user: string;
  window: DetectionWindow;
}

/** The detector's answer, normalised. */
export interface TopicBoundary {
  /** Index (in the request's window) of the first message of the current topic; `null` if none. */
  boundaryIndex: number | null;
  boundaryReason: string;
  /** 0–1. */
  confidence: number;
  /** Summary of the messages before the boundary; may be empty. */
  summary: string;
}

/** The seed's safe default for a failed call or an unparseable answer: no boundary, no summary. */
export const NO_TOPIC_BOUNDARY: Readonly<TopicBoundary> = Object.freeze({
  boundaryIndex: null,
  boundaryReason: '',
  confidence: 0,
  summary: '',
});

/** The skill prompt: what a boundary looks like (the seed's cues) and the JSON to answer with. */
export function topicDetectionSystemPrompt(
  summaryBudgetTokens: number = TOPIC_DETECTION_DEFAULTS.summaryBudgetTokens,
): string {
  return `You find topic boundaries in conversations between a user and an AI assistant.
The messages are given as "[index] ROLE: content"; long messages are cut.

Find the most recent point where the conversation moved to a new topic, and give the index of the FIRST message of that new topic. Messages 0 to boundary_index - 1 are the old topic.

Signs of a topic boundary:
- an explicit task switch ("now let's work on...", "moving on to...", "next, can you...")
- a shift to a different file or component
- a change in the type of work (debugging -> feature development, coding -> documentation)
- a context reset ("forget that", "actually", "let's try something else")

Look for a boundary in the MIDDLE of the conversation, not at the very end: the last exchange alone is not a new topic. If the whole conversation is one continuous topic, boundary_index is null.

Answer with one JSON object and nothing else:
{"boundary_index": <integer or null>, "boundary_reason": "<why this message starts a new topic>", "confidence": <number from 0.0 to 1.0>, "summary": "<summary of the messages before the boundary>"}

The summary must let the conversation continue without those messages: what was asked and done, decisions, and exact file names, commands, values and error messages that still matter. Keep it under about ${summaryBudgetTokens} tokens. Use an empty string if there is no boundary.`;
}

function flattenPart(part: Part): string | null {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'reasoning':
      return null;
    case 'tool':
      return `[tool ${part.tool}(${toolCallArguments(part.input).slice(0, 200)})]`;
    case 'file':
      return `[${part.mime.startsWith('image/') ? 'image' : 'file'}: ${part.filename ?? part.mime}]`;
    case 'compaction':
      return '[compaction requested]';
    default:
      return assertNever(part, 'part');
  }
}

/** `[i] ROLE: content` with structured content flattened to text and cut to `maxChars`. */
export function formatTopicMessage(message: Message, index: number, maxChars: number): string {
  const content = message.parts
    .map(flattenPart)
    .filter((text): text is string => text !== null && text.trim() !== '')
    .join('\n');
  const cut = content.length > maxChars ? `${content.slice(0, maxChars)}...` : content;
  return `[${index}] ${message.role.toUpperCase()}: ${cut}`;
}

/** The detection request over the newest `maxMessages` of `messages`. */
export function buildTopicDetectionRequest(
  messages: readonly Message[],
  options: TopicDetectionOptions = {},
): TopicDetectionRequest {
  const maxMessages = options.maxMessages ?? TOPIC_DETECTION_DEFAULTS.maxMessages;
  const maxChars = options.maxCharsPerMessage ?? TOPIC_DETECTION_DEFAULTS.maxCharsPerMessage;
  const start = Math.max(0, messages.length - maxMessages);
  const shown = messages.slice(start);
  const lines = shown.map((message, index) => formatTopicMessage(message, index, maxChars));
  return {
    system: topicDetectionSystemPrompt(options.summaryBudgetTokens),
    user: `Conversation (${shown.length} messages):\n\n${lines.join('\n\n')}\n\nAnswer with the JSON object only.`,
    window: { start, size: shown.length },
  };
}

/** Top-level `{…}` substrings of `text`, in order, braces inside JSON strings ignored. */
function jsonObjectCandidates(text: string): string[] {
  const candidates: string[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"' && depth > 0) inString = true;
    else if (char === '{') {
      if (depth === 0) start = i;
      depth += 1;
    } else if (char === '}' && depth > 0) {
      depth -= 1;
      if (depth === 0) candidates.push(text.slice(start, i + 1));
    }
  }
  return candidates;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/**
 * The answer's JSON object: the whole text or a fenced block; then the seed's regex (first "{" to
 * last "}"); then each balanced `{…}` in turn, for answers that hold several brace groups.
 */
function findAnswerObject(text: string): Record<string, unknown> | null {
  const unfenced = /```(?:json|JSON)?\s*\n?([\s\S]*?)```/.exec(text)?.[1] ?? text;
  const direct = parseObject(unfenced.trim());
  if (direct !== null) return direct;
  const greedy = /\{[\s\S]*\}/.exec(text)?.[0];
  const greedyParsed = greedy === undefined ? null : parseObject(greedy);
  if (greedyParsed !== null) return greedyParsed;
  for (const candidate of jsonObjectCandidates(text)) {
    const parsed = parseObject(candidate);
    if (parsed !== null) return parsed;
  }
  return null;
}

/** An index: a non-negative integer, or a string holding one. Anything else means "no boundary". */
function coerceIndex(value: unknown): number | null {
  const number = typeof value === 'string' && /^\s*\d+(\.0+)?\s*$/.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) && number >= 0 ? number : null;
}

/** A confidence in 0–1: numbers or numeric strings ("0.8", "85%"); 1–100 read as a percentage. */
function coerceConfidence(value: unknown): number {
  let number = Number.NaN;
  if (typeof value === 'number') number = value;
  else if (typeof value === 'string') {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$/.exec(value);
    if (match?.[1] !== undefined) number = Number(match[1]) / (match[2] === '%' ? 100 : 1);
  }
  if (!Number.isFinite(number) || number < 0) return 0;
  if (number > 1) return number <= 100 ? number / 100 : 0;
  return number;
}

function coerceText(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * The detector's answer from raw model text, leniently: markdown fences, prose around the JSON,
 * camelCase keys, numbers given as strings. Wrong types are coerced where the meaning is clear and
 * rejected otherwise (a bad index means no boundary, a bad confidence 0, a non-string summary
 * empty). No JSON object at all gives {@link NO_TOPIC_BOUNDARY}.
 */
export function parseTopicBoundary(text: string): TopicBoundary {
  const answer = findAnswerObject(text);
  if (answer === null) return { ...NO_TOPIC_BOUNDARY };
  return {
    boundaryIndex: coerceIndex(answer['boundary_index'] ?? answer['boundaryIndex']),
    boundaryReason: coerceText(answer['boundary_reason'] ?? answer['boundaryReason']),
    confidence: coerceConfidence(answer['confidence']),
    summary: coerceText(answer['summary']),
  };
}

/**
 * The session index of a boundary given in request indices, or `null` when there is none or it
 * lies outside the window the detector was shown.
 */
export function mapBoundaryToSession(boundaryIndex: number | null, window: DetectionWindow): number | null {
  if (boundaryIndex === null || boundaryIndex < 0 || boundaryIndex >= window.size) return null;
  return window.start + boundaryIndex;
}
