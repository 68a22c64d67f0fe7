import {
  fileOpsOfToolPart,
  mergeFileOps,
  pathsInToolInput,
  unescapePromptData,
  type FileOps,
} from '@compactor/core';
import type { SummaryFacts } from './summary-sections';
import {
  emptyFacts,
  mergeFacts,
  parseSummary,
  renderSummary,
  renderTurnPrefixSummary,
  stripBullet,
} from './summary-sections';
import type { TranscriptEntry } from './transcript';
import { parseTranscript, pathsInBlock, taggedSection, withoutSection } from './transcript';

/**
 * A deterministic "model" that summarises the transcript it is given: the first user request is
 * the goal, user sentences with must/never/always are constraints, finished tool calls are done
 * work, failed ones are blockers, the last user requests are the next steps, files come from the
 * tool calls, and a previous summary is merged rather than replaced. Good enough that tests can
 * check a compaction kept what mattered; not a language model.
 */

const CONSTRAINT_CUE = /\b(must|must not|never|always|don't|do not|avoid|prefer|make sure|only use|keep)\b/i;
const DECISION_CUE =
  /\b(decided|decide to|chose|choose|will use|going with|instead of|switched to|we'll use|i'll use)\b/i;
const EXACT_DETAIL = /`[^`]+`|--[\w-]+|\b[A-Z][A-Z0-9_]{3,}\b|\b\d{3,}\b/;

const clip = (text: string, max = 200): string => {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= max ? oneLine : `${oneLine.slice(0, max - 1)}…`;
};

function sentences(text: string): string[] {
  return (
    text
      .split(/(?<=[.!?])\s+|\n+/)
      // A bulleted line's marker would be rendered again by the summary's own bullets ("- - …").
      .map(stripBullet)
      .filter((sentence) => sentence.length > 0)
  );
}

/** What a serialised tool call says: its tool name, its input and a target (first path, else the arguments). */
function describeToolCall(entry: TranscriptEntry): { tool: string; target: string; input: unknown } {
  const tool = entry.tool ?? 'tool';
  const args = entry.args ?? '';
  let input: unknown = args;
  try {
    input = JSON.parse(args) as unknown;
  } catch {
    // Arguments cut by `toolArgsMaxChars` are not JSON any more; recover the usual path keys.
    const path =
      /"(?:path|file_path|filePath|filepath|file|filename|notebook_path|target_file)"\s*:\s*"([^"]+)"/.exec(
        args,
      );
    if (path?.[1] !== undefined) input = { path: path[1] };
  }
  const command =
    typeof input === 'object' && input !== null ? (input as Record<string, unknown>)['command'] : undefined;
  const target = pathsInToolInput(input)[0] ?? (typeof command === 'string' ? command : args);
  return { tool, target: clip(target, 80), input };
}

/** Facts of one transcript, without any previous summary. */
export function factsFromTranscript(entries: readonly TranscriptEntry[]): SummaryFacts {
  const facts = emptyFacts();
  const userTexts = entries.filter((entry) => entry.kind === 'user').map((entry) => entry.text);
  const firstUser = userTexts[0];
  if (firstUser !== undefined) facts.goal = clip(firstUser, 300);

  for (const text of userTexts) {
    for (const sentence of sentences(text)) {
      if (CONSTRAINT_CUE.test(sentence)) facts.constraints.push(clip(sentence));
      if (EXACT_DETAIL.test(sentence)) facts.criticalContext.push(clip(sentence));
    }
  }
  facts.nextSteps = userTexts
    .slice(userTexts.length > 1 ? 1 : 0)
    .slice(-2)
    .map((text) => clip(text));

  const fileOps: FileOps = { readFiles: [], modifiedFiles: [] };
  entries.forEach((entry, i) => {
    if (entry.kind === 'assistant') {
      for (const sentence of sentences(entry.text)) {
        if (DECISION_CUE.test(sentence)) facts.decisions.push(clip(sentence));
      }
    }
    if (entry.kind !== 'tool-call') return;
    const call = describeToolCall(entry);
    const result = entries[i + 1];
    const failed = result?.kind === 'tool-error';
    const status = failed ? 'error' : 'completed';
    const ops = fileOpsOfToolPart({
      type: 'tool',
      callId: `stub-${i}`,
      tool: call.tool,
      status,
      input: call.input,
      output: null,
      error: null,
      compactedAt: null,
      tokens: 0,
      outputTokens: 0,
    });
    for (const op of ops) (op.kind === 'read' ? fileOps.readFiles : fileOps.modifiedFiles).push(op.path);
    if (failed) {
      const firstLine = clip(result.text.split(/\r?\n/)[0] ?? '', 160);
      facts.blocked.push(`${call.tool} ${call.target} failed: ${firstLine}`);
      facts.criticalContext.push(`Error from ${call.tool}: ${firstLine}`);
    } else {
      facts.done.push(`${call.tool} ${call.target}`);
    }
  });
  const merged = mergeFileOps(fileOps);
  facts.readFiles = merged.readFiles;
  facts.modifiedFiles = merged.modifiedFiles;

  const lastAssistant = entries.filter((entry) => entry.kind === 'assistant').at(-1);
  const lastSentence = lastAssistant ? sentences(lastAssistant.text)[0] : undefined;
  if (lastSentence !== undefined) facts.inProgress.push(clip(lastSentence));
  return facts;
}

export interface SummaryRequestView {
  transcript: string;
  previousSummary: string | null;
  /** File ops the caller listed in the prompt (outside the transcript). */
  promptFileOps: FileOps;
  /** The prompt asks for core's turn-prefix format (the start of a split turn). */
  turnPrefix: boolean;
  /**
   * The smallest "within N tokens" the prompt's own instructions ask for (core's length and
   * cut-off notes), outside the transcript and the previous summary; `null` when none.
   */
  lengthTargetTokens: number | null;
}

/**
 * Models overshoot length targets: asked for "within N tokens", the stub writes up to
 * `LENGTH_OVERSHOOT × N` (never more than its untrimmed summary). A target equal to the output
 * limit therefore still gets cut off, as real models' summaries are, and only a target with room
 * to spare below it is safe.
 */
export const LENGTH_OVERSHOOT = 1.5;

/** The smallest "within N tokens" in `instructions`. */
function lengthTarget(instructions: string): number | null {
  const targets = [...instructions.matchAll(/\bwithin (\d[\d,]*) tokens\b/gi)].map((match) =>
    Number((match[1] ?? '').replace(/,/g, '')),
  );
  const valid = targets.filter((n) => Number.isFinite(n) && n > 0);
  return valid.length === 0 ? null : Math.min(...valid);
}

/** Finds the transcript, previous summary and file-op blocks in a summarization prompt. */
export function readSummaryRequest(prompt: string): SummaryRequestView | null {
  const transcript = taggedSection(prompt, 'conversation');
  if (transcript === null) return null;
  const outside = withoutSection(prompt, 'conversation');
  const escapedSummary =
    taggedSection(outside, 'previous-summary') ?? taggedSection(outside, 'previous_summary');
  // The previous summary is data on lines of its own (core escapes it): read as it was written.
  const previousSummary = escapedSummary === null ? null : unescapePromptData(escapedSummary, 'line-start');
  const instructions = withoutSection(withoutSection(outside, 'previous-summary'), 'previous_summary');
  return {
    transcript,
    previousSummary,
    promptFileOps: {
      readFiles: pathsInBlock(outside, 'read-files'),
      modifiedFiles: pathsInBlock(outside, 'modified-files'),
    },
    // Asked by the prompt's own format, not by a previous (split-turn) summary or the client's text.
    turnPrefix: /^## Original Request\b/m.test(withoutSection(instructions, 'instructions')),
    lengthTargetTokens: lengthTarget(instructions),
  };
}

/**
 * Lists in the order their items are given up when a summary must be shorter: finished steps
 * first, constraints last. Each loses its least kept item (the one its merge would drop first).
 */
const TRIM_ORDER = [
  'done',
  'decisions',
  'blocked',
  'nextSteps',
  'inProgress',
  'criticalContext',
  'constraints',
] as const satisfies ReadonlyArray<keyof SummaryFacts>;
/** Lists whose merge keeps the newest items: they lose their oldest one. */
const KEEPS_NEWEST: ReadonlySet<string> = new Set(['done', 'blocked', 'nextSteps', 'inProgress']);

/**
 * The rendered summary, shortened towards `maxChars` the way the length notes ask: file lists
 * first (they are appended to the summary anyway), then list items one at a time down to one per
 * list, then shorter items. Never drops a section or the goal, so it can stay above `maxChars`.
 */
function renderWithin(
  facts: SummaryFacts,
  maxChars: number | null,
  render: (f: SummaryFacts) => string,
): string {
  let current = facts;
  let text = render(current);
  if (maxChars === null || text.length <= maxChars) return text;
  current = { ...current, readFiles: [], modifiedFiles: [] };
  text = render(current);
  while (text.length > maxChars) {
    const key = TRIM_ORDER.find((name) => current[name].length > 1);
    if (key === undefined) break;
    const items = current[key];
    current = { ...current, [key]: KEEPS_NEWEST.has(key) ? items.slice(1) : items.slice(0, -1) };
    text = render(current);
  }
  if (text.length <= maxChars) return text;
  const shorter = Object.fromEntries(
    TRIM_ORDER.map((name) => [name, current[name].map((item) => clip(item, 80))]),
  );
  return render({ ...current, ...shorter, goal: current.goal === null ? null : clip(current.goal, 160) });
}

/** The full stub summary for a summarization prompt. */
export function writeSummary(request: SummaryRequestView): string {
  const entries = parseTranscript(request.transcript);
  // A summary message inside the compacted range is a previous summary too (imported histories).
  const embedded = entries
    .filter((entry) => entry.kind === 'summary')
    .map((entry) => parseSummary(entry.text));
  const previous = request.previousSummary?.trim() ? [parseSummary(request.previousSummary)] : [];
  let facts = emptyFacts();
  for (const earlier of [...previous, ...embedded]) facts = mergeFacts(facts, earlier);
  facts = mergeFacts(facts, factsFromTranscript(entries.filter((entry) => entry.kind !== 'summary')));
  const fileOps = mergeFileOps(
    { readFiles: facts.readFiles, modifiedFiles: facts.modifiedFiles },
    request.promptFileOps,
  );
  const maxChars =
    request.lengthTargetTokens === null
      ? null
      : Math.floor(request.lengthTargetTokens * LENGTH_OVERSHOOT * 4);
  if (request.turnPrefix) return renderWithin(facts, maxChars, renderTurnPrefixSummary);
  return renderWithin({ ...facts, ...fileOps }, maxChars, renderSummary);
}
