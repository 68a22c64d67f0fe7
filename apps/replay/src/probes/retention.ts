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
import { constraints, firstGoal, latestRequest, type Constraint } from './user-facts';

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
  /** The transcript's facts as earlier probes of the same run read them (built here otherwise). */
  facts?: TranscriptFacts;
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
  return new TranscriptFacts(messages, fileTools).filesTouched(messages.length);
}

/**
 * What the probes read of a transcript's prefix, extended as the prefix grows: a replay probes
 * after every compaction, and reading the whole prefix each time made the probes quadratic in
 * the transcript (2.0 of 2.7 s of probing at 6,000 messages was `filesTouched` alone). The files
 * of a prefix shorter than the last one are read again from the start.
 */
export class TranscriptFacts {
  private files = { upTo: 0, modified: new Set<string>(), read: new Set<string>() };
  private found = { upTo: 0, constraints: [] as Constraint[] };

  constructor(
    private readonly messages: readonly MessageInput[],
    private readonly fileTools?: FileToolNames,
  ) {}

  /** Files that read/write/edit-like tools touched in the first `count` messages, modified first. */
  filesTouched(count: number): { path: string; kind: 'read' | 'modified' }[] {
    if (count < this.files.upTo) this.files = { upTo: 0, modified: new Set(), read: new Set() };
    const { modified, read } = this.files;
    for (const message of this.messages.slice(this.files.upTo, count)) {
      for (const part of message.parts) {
        if (part.type !== 'tool') continue;
        // core reads the call's name, status and input; the rest of a stored part is irrelevant here.
        const ops = fileOpsOfToolPart(
          { ...part, input: part.input ?? {} } as unknown as ToolPart,
          this.fileTools,
        );
        for (const op of ops) (op.kind === 'read' ? read : modified).add(op.path);
      }
    }
    this.files.upTo = Math.max(this.files.upTo, Math.min(count, this.messages.length));
    return [
      ...[...modified].map((path) => ({ path, kind: 'modified' as const })),
      ...[...read].filter((path) => !modified.has(path)).map((path) => ({ path, kind: 'read' as const })),
    ];
  }

  /** The constraints users stated in the first `count` messages, in order (kept by position). */
  constraints(count: number): Constraint[] {
    const start = this.found.upTo;
    for (const c of constraints(this.messages.slice(start, count))) {
      this.found.constraints.push({ ...c, index: c.index + start });
    }
    this.found.upTo = Math.max(start, Math.min(count, this.messages.length));
    return this.found.constraints.filter((c) => c.index < count);
  }
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
  const facts = input.facts ?? new TranscriptFacts(input.messages, input.fileTools);
  const summaryMessages = input.context.filter((m) => m.summary === true);
  const keptMessages = input.context.filter((m) => m.summary !== true);
  const summaryText = textOf(summaryMessages);
  const summary = haystack(summaryText);
  const keptText = textOf(keptMessages);
  const kept = haystack(keptText);
  const appended = input.messages.slice(0, input.appendedCount);

  const files = facts.filesTouched(input.compactedCount).map((file) => ({
    ...file,
    inSummary: summaryText.includes(file.path),
  }));
  const goal = firstGoal(appended);
  const latest = latestRequest(appended);
  return {
    files,
    goal: goal && { text: goal.text, where: locate(summary, kept, goal.text, GOAL_COVERAGE) },
    constraints: facts.constraints(input.appendedCount).map((c) => ({
      text: c.text,
      where: locate(summary, kept, c.text, CONSTRAINT_COVERAGE, c.cues),
    })),
    latestRequest: latest && { text: latest.text, kept: keptText.includes(latest.text) },
  };
}
