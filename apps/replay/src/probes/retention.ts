/**
 * Retention probes: after a compaction, does the context the model gets still know what the
 * agent was told and did? Checked against the transcript the replay appended, each item as
 * present in the context served (whitespace collapsed, verbatim: core `holdsVerbatim`) or not:
 *
 * - every file the session's ledger (core's extraction from tool inputs, patch bodies and shell
 *   commands) holds before the boundary: named verbatim, or in its group of the ledger's block (`src/api/{routes.ts, auth.ts}`), or not named;
 * - every fact the user stated so far (core `factsInText`: identifiers, versions, numbers with
 *   units, URLs): verbatim or not;
 * - the first user goal, every explicit user constraint stated so far and the latest user
 *   request, all in the user's own words (core `userWords`: harness text is no request):
 *   verbatim, only `paraphrased` (the summary holds most of their content words, which is not
 *   the text), or lost.
 *
 * What is not present is then looked up through recall (recall.ts): recoverable or not.
 */
import {
  chatMessageText,
  emptyLedger,
  factsInText,
  holdsVerbatim,
  ledgerOfMessages,
  mergeLedgers,
  toolInputStrings,
  verbatimText,
  type ArtifactLedger,
  type FileToolNames,
  type LedgerFileKind,
  type Message,
  type VerbatimText,
} from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import { fileLookup, fileNamed, type FileNamed } from './files';
import { haystack, mentions, type Haystack } from './mentions';
import { constraints, firstGoal, latestRequest, userText, type Constraint } from './user-facts';

/** A context message as `GET …/context` returns it (native format); only what the probes read. */
export interface ContextMessage {
  role: string;
  summary?: boolean;
  parts: ReadonlyArray<{ type: string; text?: string; tool?: string; input?: unknown }>;
}

/**
 * Where the context has a user's sentence: `verbatim` anywhere in what is served, `paraphrased`
 * when only the summary holds most of its content words (and every cue word), or nowhere (`null`).
 */
export type Where = 'verbatim' | 'paraphrased' | null;

export interface FactProbe {
  text: string;
  where: Where;
}

export interface FileProbe {
  path: string;
  /** What the session did to it, as its ledger says. */
  kind: LedgerFileKind;
  /** How the served context names it: verbatim, in its ledger group, or not (`null`). */
  named: FileNamed;
}

export interface RetentionProbes {
  files: FileProbe[];
  goal: FactProbe | null;
  constraints: FactProbe[];
  /**
   * The facts the user stated so far (identifiers, paths, versions, quantities, URLs): verbatim or
   * not (`null`). Absent in older reports.
   */
  facts?: FactProbe[];
  latestRequest: FactProbe | null;
}

export interface RetentionInput {
  /** The transcript as appended, in order. */
  messages: readonly MessageInput[];
  /** How many of them lie before the compaction's boundary (summarised or dropped). */
  compactedCount: number;
  /** How many had been appended when the context was read. */
  appendedCount: number;
  /** The context served right after the compaction (native format): which messages are summaries. */
  context: readonly ContextMessage[];
  /**
   * The text of each message as the model reads it (`chatMessageText` of the OpenAI rendering:
   * pruned outputs as their markers); read from `context` (texts and tool inputs) when absent.
   */
  served?: readonly string[];
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

/** What a model reads of a native context message: its texts, its tool calls' names and inputs. */
function nativeText(message: ContextMessage): string {
  return message.parts
    .flatMap((p) =>
      p.type === 'text'
        ? [p.text ?? '']
        : p.type === 'tool'
          ? [p.tool ?? '', ...toolInputStrings(p.input)]
          : [],
    )
    .join('\n');
}

/** A file the transcript touched, as the session's ledger has it. */
export interface TouchedFile {
  path: string;
  kind: LedgerFileKind;
}

/** Files the tool calls in `messages` touched, each once, as core's ledger reads them: written ones first. */
export function filesTouched(messages: readonly MessageInput[], fileTools?: FileToolNames): TouchedFile[] {
  return new TranscriptFacts(messages, fileTools).filesTouched(messages.length);
}

/** A transcript message as the store would hold it (numbered from 1), for core's ledger. */
export function asStored(message: MessageInput, index: number): Message {
  return {
    id: `m${index + 1}`,
    seq: index + 1,
    role: message.role,
    parts: message.parts,
    finish: message.finish ?? null,
    error: null,
    usage: null,
    createdAt: '2025-01-01T00:00:00Z',
    metadata: {},
    summary: false,
    compactionId: null,
  } as unknown as Message;
}

/**
 * What the probes read of a transcript's prefix, extended as the prefix grows: a replay probes
 * after every compaction, and reading the whole prefix each time made the probes quadratic in
 * the transcript. The files are core's artifact ledger (`ledgerOfMessages`: tool inputs, patch
 * bodies, shell commands; no URLs), each new stretch read alone and merged (`mergeLedgers`,
 * which gives what reading the prefix whole gives); a prefix shorter than the last one is read
 * again from the start.
 */
export class TranscriptFacts {
  private files: { upTo: number; ledger: ArtifactLedger } = { upTo: 0, ledger: emptyLedger() };
  private found = { upTo: 0, constraints: [] as Constraint[] };
  private stated = { upTo: 0, seen: new Set<string>(), facts: [] as { index: number; text: string }[] };

  constructor(
    private readonly messages: readonly MessageInput[],
    private readonly fileTools?: FileToolNames,
  ) {}

  /** Files the first `count` messages touched: modified, created and deleted ones first, then read ones. */
  filesTouched(count: number): TouchedFile[] {
    const end = Math.min(count, this.messages.length);
    if (end < this.files.upTo) this.files = { upTo: 0, ledger: emptyLedger() };
    if (end > this.files.upTo) {
      const stretch = this.messages
        .slice(this.files.upTo, end)
        .map((message, i) => asStored(message, this.files.upTo + i));
      const read = ledgerOfMessages(stretch, this.fileTools ? { fileTools: this.fileTools } : {});
      this.files = { upTo: end, ledger: mergeLedgers(this.files.ledger, read) };
    }
    const files = this.files.ledger.files.map(({ path, kind }) => ({ path, kind }));
    return [...files.filter((f) => f.kind !== 'read'), ...files.filter((f) => f.kind === 'read')];
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

  /**
   * The facts users stated in the first `count` messages (core `factsInText` over their own words:
   * identifiers, paths, versions, quantities, URLs), each text once, in order.
   */
  userFacts(count: number): string[] {
    const start = this.stated.upTo;
    this.messages.slice(start, count).forEach((message, i) => {
      for (const fact of factsInText(userText(message))) {
        if (this.stated.seen.has(fact.text)) continue;
        this.stated.seen.add(fact.text);
        this.stated.facts.push({ index: start + i, text: fact.text });
      }
    });
    this.stated.upTo = Math.max(start, Math.min(count, this.messages.length));
    return this.stated.facts.filter((f) => f.index < count).map((f) => f.text);
  }
}

function locate(
  served: VerbatimText,
  summary: Haystack,
  text: string,
  coverage: number,
  required?: string[],
): Where {
  if (holdsVerbatim(served, text)) return 'verbatim';
  return mentions(summary, text, { coverage, ...(required ? { required } : {}) }) ? 'paraphrased' : null;
}

export function probeRetention(input: RetentionInput): RetentionProbes {
  const facts = input.facts ?? new TranscriptFacts(input.messages, input.fileTools);
  const texts = input.served ?? input.context.map(nativeText);
  const served = verbatimText(texts);
  const files = fileLookup(served, texts.join('\n'));
  const summary = haystack(textOf(input.context.filter((m) => m.summary === true)));
  const appended = input.messages.slice(0, input.appendedCount);
  const goal = firstGoal(appended);
  const latest = latestRequest(appended);
  return {
    files: facts
      .filesTouched(input.compactedCount)
      .map((file) => ({ ...file, named: fileNamed(files, file.path) })),
    goal: goal && { text: goal.text, where: locate(served, summary, goal.text, GOAL_COVERAGE) },
    constraints: facts.constraints(input.appendedCount).map((c) => ({
      text: c.text,
      where: locate(served, summary, c.text, CONSTRAINT_COVERAGE, c.cues),
    })),
    facts: facts
      .userFacts(input.appendedCount)
      .map((text) => ({ text, where: holdsVerbatim(served, text) ? 'verbatim' : null })),
    // A request is long and specific: only the text itself counts, never a paraphrase of it.
    latestRequest: latest && {
      text: latest.text,
      where: holdsVerbatim(served, latest.text) ? 'verbatim' : null,
    },
  };
}

/** The served texts of an OpenAI-format context, as {@link RetentionInput.served} takes them. */
export function servedTexts(messages: readonly unknown[]): string[] {
  return messages.map((m) => chatMessageText(m as Parameters<typeof chatMessageText>[0]));
}
