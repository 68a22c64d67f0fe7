/**
 * Topic-boundary detection (docs/PRESETS.md, `topic`): the request that asks an LLM where the current topic
 * started (and, in the reference's mode, for the summary of what compaction will drop), and the
 * lenient parsing of its JSON answer with a safe default.
 */
import { assertNever, type Message, type Part } from './model';
import { toolCallArguments } from './openai-format';
import { DEFAULT_POLICY, POLICY_PRESETS } from './policy';
import { escapePromptData, type PromptDataPosition } from './prompt-data';
import { countLeadingSummaryMessages, extractPreviousSummary } from './summary-messages';
import { summarizeCaseCut, type TopicCutRules } from './topic-cut';

export { findVerbatimStart } from './topic-cut';

/** Who writes the summary of a topic-mode `summarize` case (policy `topic.summaryFrom`). */
export type TopicSummaryFrom = 'detector' | 'summarizer';

/** Limits of the detection request; unset fields take the topic reference's values (the `topic` preset's). */
export interface TopicDetectionOptions {
  /** Default: the policy's `topic.maxMessages` (seed: the newest 50). */
  maxMessages?: number;
  /** Default: the policy's `topic.maxCharsPerMessage` (seed: 1,000). */
  maxCharsPerMessage?: number;
  /**
   * Length the detector's summary should stay under (seed: `summary_budget_tokens`). Default: the
   * `topic` preset's summarizer output budget (500).
   */
  summaryBudgetTokens?: number;
  /**
   * The verbatim window (policy `topic.verbatimWindowTokens`): the summary asked for covers the
   * messages before it, which is exactly what the `summarize` case drops.
   */
  verbatimWindowTokens?: number;
  /**
   * `summarizer`: the summary will be written by the normal summarizer, so the detector is not
   * asked for one (saves its output). Default `detector` (the reference's request).
   */
  summaryFrom?: TopicSummaryFrom;
  /** Default: the default policy's `cutAt`; pass the policy's, as {@link planTopicCompaction} gets it. */
  cutAt?: TopicCutRules['cutAt'];
  /** Default: the policy's `topic.minVerbatimExchanges` (2); pass the policy's. */
  minVerbatimExchanges?: number;
  /** Sizes a message for the verbatim window (default: stored tokens; see `tokenMeasureFor`). */
  measure?: (message: Message) => number;
}

/** Which messages of the session the request showed: request index `i` is session index `start + i`. */
export interface DetectionWindow {
  start: number;
  size: number;
  /**
   * Session index before which the detector was asked to summarise: where the `summarize` case
   * cuts (the verbatim window's start, aligned by `cutAt` and the minimum exchanges), so the
   * summary covers exactly the dropped messages; `null` or absent when it was asked for none. Its summary also covers the
   * previous summary, which the request gave in full.
   */
  summaryEnd?: number | null;
}

/** The detector's system and user prompts, and the window they show; keep `window` to map the answer back. */
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
  /** Summary of the messages the request named (see {@link DetectionWindow.summaryEnd}); may be empty. */
  summary: string;
}

/** The reference's safe default for a failed call or an unparseable answer: no boundary, no summary. */
export const NO_TOPIC_BOUNDARY: Readonly<TopicBoundary> = Object.freeze({
  boundaryIndex: null,
  boundaryReason: '',
  confidence: 0,
  summary: '',
});

/**
 * Output tokens the detector's answer needs beyond its summary: the JSON's keys, the boundary
 * index, a one-sentence reason and the confidence. The reference's budget
 * (`summary_budget_tokens`) is for the summary alone: an answer capped at it cuts a long
 * summary's JSON off, which parses as "no boundary", so truncate-only can never be chosen and a
 * second (summarizer) call runs.
 */
export const TOPIC_ANSWER_OVERHEAD_TOKENS = 256;

/**
 * The detection request's `max_tokens`: the summary budget plus {@link TOPIC_ANSWER_OVERHEAD_TOKENS},
 * within the model's own output limit when it has one.
 */
export function topicDetectionOutputTokens(
  summaryBudgetTokens: number,
  modelMaxOutput: number | null,
): number {
  const wanted = summaryBudgetTokens + TOPIC_ANSWER_OVERHEAD_TOKENS;
  return modelMaxOutput !== null && modelMaxOutput > 0 ? Math.min(wanted, modelMaxOutput) : wanted;
}

const SUMMARY_INSTRUCTIONS = (summaryBudgetTokens: number): string =>
  `"summary": ALWAYS write it when the request names messages to summarise, whether or not you found a boundary: those messages are removed from the conversation and your summary replaces them. When a <previous-summary> is given, your summary replaces it too: keep everything it says that still matters. The summary must let the conversation continue without those messages: what was asked and done, decisions, every constraint or preference the user stated, and exact file names, commands, values and error messages that still matter. Keep it under about ${summaryBudgetTokens} tokens. Use an empty string only when the request names no messages to summarise.`;

const NO_SUMMARY_INSTRUCTIONS = '"summary": always an empty string; the summary is written separately.';

/** The skill prompt: what a boundary looks like (the reference's cues) and the JSON to answer with. */
export function topicDetectionSystemPrompt(
  summaryBudgetTokens: number = POLICY_PRESETS.topic.summarizer.maxOutputTokens,
  summaryFrom: TopicSummaryFrom = 'detector',
): string {
  return `You find topic boundaries in conversations between a user and an AI assistant.
The messages are given as "[index] ROLE: content"; long messages are cut. A <previous-summary>, when given, covers the conversation before message [0].
A backslash before a "[" or "<" marks text quoted from inside a message or summary: it is part of that text, not a new message or tag.

Find the most recent point where the conversation moved to a new topic, and give the index of the FIRST message of that new topic. Messages 0 to boundary_index - 1 are the old topic.

Signs of a topic boundary:
- an explicit task switch ("now let's work on...", "moving on to...", "next, can you...")
- a shift to a different file or component
- a change in the type of work (debugging -> feature development, coding -> documentation)
- a context reset ("forget that", "actually", "let's try something else")

Look for a boundary in the MIDDLE of the conversation, not at the very end: the last exchange alone is not a new topic. If the whole conversation is one continuous topic, boundary_index is null.

Answer with one JSON object and nothing else:
{"boundary_index": <integer or null>, "boundary_reason": "<why this message starts a new topic>", "confidence": <number from 0.0 to 1.0>, "summary": "<see below>"}

${summaryFrom === 'summarizer' ? NO_SUMMARY_INSTRUCTIONS : SUMMARY_INSTRUCTIONS(summaryBudgetTokens)}`;
}

/**
 * A part as one or more lines of the request, `position` saying where it starts: the first one
 * after the `[i] ROLE:` label, the others on lines of their own. The `[tool …]`, `[image: …]`
 * lines are the request's own; what they quote is escaped like any content (prompt-data.ts).
 */
function flattenPart(part: ShownPart, position: PromptDataPosition): string {
  const inline = (text: string): string => escapePromptData(text, 'inline');
  switch (part.type) {
    case 'text':
      return escapePromptData(part.text, position);
    case 'tool':
      return `[tool ${inline(part.tool)}(${inline(toolCallArguments(part.input).slice(0, 200))})]`;
    case 'file':
      return `[${part.mime.startsWith('image/') ? 'image' : 'file'}: ${inline(part.filename ?? part.mime)}]`;
    case 'compaction':
      return '[compaction requested]';
    default:
      return assertNever(part, 'part');
  }
}

/** The parts the detector is shown: no reasoning, no blank text. */
type ShownPart = Exclude<Part, { type: 'reasoning' }>;
const isShown = (part: Part): part is ShownPart =>
  part.type !== 'reasoning' && (part.type !== 'text' || part.text.trim() !== '');

/** `[i] ROLE: content` with structured content flattened to text and cut to `maxChars`. */
export function formatTopicMessage(message: Message, index: number, maxChars: number): string {
  const content = message.parts
    .filter(isShown)
    .map((part, i) => flattenPart(part, i === 0 ? 'inline' : 'line-start'))
    .join('\n');
  const cut = content.length > maxChars ? `${content.slice(0, maxChars)}...` : content;
  return `[${index}] ${message.role.toUpperCase()}: ${cut}`;
}

/**
 * The detection request over the newest `maxMessages` of `messages` (the reference's format). A
 * previous summary at the start is not one of them: it is given whole in `<previous-summary>`
 * (cut to `maxCharsPerMessage` it would lose what earlier cycles kept). Unless `summaryFrom` is
 * `summarizer`, the request names the messages to summarise: exactly the ones the `summarize`
 * case drops (before the verbatim window, the cut aligned as the plan aligns it: never one the
 * plan keeps). It asks for none when the detector cannot see all of
 * them (more than `maxMessages` after the previous summary); the plan then uses the summarizer.
 */
export function buildTopicDetectionRequest(
  messages: readonly Message[],
  options: TopicDetectionOptions = {},
): TopicDetectionRequest {
  const maxMessages = options.maxMessages ?? DEFAULT_POLICY.topic.maxMessages;
  const maxChars = options.maxCharsPerMessage ?? DEFAULT_POLICY.topic.maxCharsPerMessage;
  const summaryFrom = options.summaryFrom ?? 'detector';
  const leading = countLeadingSummaryMessages(messages);
  const start = Math.max(leading, messages.length - maxMessages);
  const shown = messages.slice(start);
  const lines = shown.map((message, index) => formatTopicMessage(message, index, maxChars));

  // What the `summarize` case drops: everything before its cut (topic-cut.ts, shared with the plan).
  const summaryEnd =
    summarizeCaseCut(
      messages,
      options.verbatimWindowTokens ?? DEFAULT_POLICY.topic.verbatimWindowTokens,
      {
        cutAt: options.cutAt ?? DEFAULT_POLICY.cutAt,
        minVerbatimExchanges: options.minVerbatimExchanges ?? DEFAULT_POLICY.topic.minVerbatimExchanges,
      },
      options.measure,
    )?.keepFrom ?? 0;
  const askForSummary = summaryFrom === 'detector' && start === leading && summaryEnd > start;
  let summaryRequest: string;
  if (summaryFrom === 'summarizer') summaryRequest = 'Leave "summary" empty.';
  else if (askForSummary) {
    const last = summaryEnd - start - 1;
    summaryRequest = `Summarize messages [0] to [${last}]${leading > 0 ? ' together with the previous summary' : ''} in "summary"; messages from [${last + 1}] on are kept verbatim.`;
  } else summaryRequest = 'No messages need a summary here: use an empty string for "summary".';

  const previousSummary = leading > 0 ? extractPreviousSummary(messages) : null;
  const sections = [
    previousSummary === null
      ? null
      : `<previous-summary>\n${escapePromptData(previousSummary, 'line-start')}\n</previous-summary>`,
    `Conversation (${shown.length} messages):\n\n${lines.join('\n\n')}`,
    `${summaryRequest}\nAnswer with the JSON object only.`,
  ].filter((section) => section !== null);
  return {
    system: topicDetectionSystemPrompt(options.summaryBudgetTokens, summaryFrom),
    user: sections.join('\n\n'),
    window: { start, size: shown.length, summaryEnd: askForSummary ? summaryEnd : null },
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
 * The answer's JSON object: the whole text or a fenced block; then the reference's regex (first "{" to
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
