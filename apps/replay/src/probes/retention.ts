/**
 * Retention probes: after a compaction, does the context the model gets still know what the
 * agent was told and did? Checked against the transcript the replay appended:
 *
 * - every file a read/write/edit-like tool touched before the boundary is named in the summary;
 * - the first user goal is in the summary (or still verbatim in the kept window);
 * - every explicit user constraint stated so far is in the summary (or kept verbatim);
 * - the latest user request is verbatim in the kept window.
 */
import { fileOpsOfToolPart, type FileToolNames, type ToolPart } from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import { haystack, mentions, type Haystack } from './mentions';
import { constraints, firstGoal, latestRequest } from './user-facts';

/** A context message as `GET …/context` returns it (native format); only what the probes read. */
export interface ContextMessage {
  role: string;
  summary?: boolean;
  parts: ReadonlyArray<{ type: string; text?: string }>;
}

export type Where = 'summary' | 'kept' | null;

export interface FactProbe {
  text: string;
  /** Where the context still has it; `null`: lost. */
  where: Where;
}

export interface FileProbe {
  path: string;
  kind: 'read' | 'modified';
  inSummary: boolean;
}

export interface RetentionProbes {
  files: FileProbe[];
  goal: FactProbe | null;
  constraints: FactProbe[];
  latestRequest: { text: string; kept: boolean } | null;
}

export interface RetentionInput {
  /** The transcript as appended, in order. */
  messages: readonly MessageInput[];
  /** How many of them lie before the compaction's boundary (summarised or dropped). */
  compactedCount: number;
  /** How many had been appended when the context was read. */
  appendedCount: number;
  /** The context served right after the compaction (native format). */
  context: readonly ContextMessage[];
  fileTools?: FileToolNames;
}

/** How much of a goal's content words a summary must keep: summaries paraphrase a request. */
export const GOAL_COVERAGE = 0.6;
/** Constraints are short and precise: most words, and every cue word, must survive. */
export const CONSTRAINT_COVERAGE = 0.8;

function textOf(messages: readonly ContextMessage[]): string {
  return messages.flatMap((m) => m.parts.map((p) => (p.type === 'text' ? (p.text ?? '') : ''))).join('\n');
}

/** Files the tool calls in `messages` read or modified, each once, modifications first. */
export function filesTouched(
  messages: readonly MessageInput[],
  fileTools?: FileToolNames,
): { path: string; kind: 'read' | 'modified' }[] {
  const modified = new Set<string>();
  const read = new Set<string>();
  for (const message of messages) {
    for (const part of message.parts) {
      if (part.type !== 'tool') continue;
      // core reads the call's name, status and input; the rest of a stored part is irrelevant here.
      const ops = fileOpsOfToolPart({ ...part, input: part.input ?? {} } as unknown as ToolPart, fileTools);
      for (const op of ops) (op.kind === 'read' ? read : modified).add(op.path);
    }
  }
  return [
    ...[...modified].map((path) => ({ path, kind: 'modified' as const })),
    ...[...read].filter((path) => !modified.has(path)).map((path) => ({ path, kind: 'read' as const })),
  ];
}

function locate(
  summary: Haystack,
  kept: Haystack,
  text: string,
  coverage: number,
  required?: string[],
): Where {
  if (mentions(summary, text, { coverage, ...(required ? { required } : {}) })) return 'summary';
  return mentions(kept, text, { coverage: 1 }) ? 'kept' : null;
}

export function probeRetention(input: RetentionInput): RetentionProbes {
  const summaryMessages = input.context.filter((m) => m.summary === true);
  const keptMessages = input.context.filter((m) => m.summary !== true);
  const summaryText = textOf(summaryMessages);
  const summary = haystack(summaryText);
  const keptText = textOf(keptMessages);
  const kept = haystack(keptText);
  const appended = input.messages.slice(0, input.appendedCount);

  const files = filesTouched(input.messages.slice(0, input.compactedCount), input.fileTools).map((file) => ({
    ...file,
    inSummary: summaryText.includes(file.path),
  }));
  const goal = firstGoal(appended);
  const latest = latestRequest(appended);
  return {
    files,
    goal: goal && { text: goal.text, where: locate(summary, kept, goal.text, GOAL_COVERAGE) },
    constraints: constraints(appended).map((c) => ({
      text: c.text,
      where: locate(summary, kept, c.text, CONSTRAINT_COVERAGE, c.cues),
    })),
    latestRequest: latest && { text: latest.text, kept: keptText.includes(latest.text) },
  };
}
