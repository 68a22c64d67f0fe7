import type { FileOps, Message, SummaryPrompt, SummaryPromptStyle } from '@compactor/core';
import {
  buildSummaryPrompt,
  extractFileOps,
  mergeFileOps,
  serializeTranscript,
  storedTokens,
  summaryLengthNote,
} from '@compactor/core';
import { boundFileOps } from './chunking';
import type { CountTokensAsync } from './count-tokens';
import type { FoldState, Range } from './fold-plan';
import { fileListMaxChars } from './fold-plan';
import type { MessageSource, MessageWindow } from './message-source';
import { pacer } from './message-source';
import { countPromptTokens, promptTokenBound } from './summarize';
import { TranscriptCounts } from './transcript-counts';

/** What every prompt of one fold shares, besides the messages and the running summary. */
export interface FoldPromptInput {
  /** The range to summarise, without the leading summary messages the previous summary stands for. */
  messages: MessageWindow;
  /** The source `messages` reads, and where in it they start (for its stored tokens). */
  source: MessageSource;
  offset: number;
  kind: 'history' | 'turn-prefix';
  instructions: string | null;
  fileOps: FileOps | null;
  style: SummaryPromptStyle | undefined;
  bounds: { toolResultMaxChars: number; toolArgsMaxChars: number };
  countTokens: CountTokensAsync;
  signal: AbortSignal | undefined;
}

/**
 * The prompts of a fold over a message window, built and counted: the I/O side of planning (the
 * tokenizer is asynchronous and the messages are read window by window). Keeps what would be
 * expensive to redo: the last prompt built and the last one counted, each message's transcript
 * count and the file ops of the messages before the next chunk.
 */
export class FoldPrompts {
  /** Transcript tokens of each message, counted once and forgotten with the chunk that held it. */
  readonly transcriptCounts: TranscriptCounts;
  private readonly pace = pacer();
  private lastCounted: { prompt: SummaryPrompt; tokens: number } | null = null;
  private lastBuilt: BuiltPrompt | null = null;
  private opsUpTo = 0;
  private opsBefore: FileOps | null = null;

  constructor(private readonly input: FoldPromptInput) {
    // Counting a huge transcript takes a while: a cancelled compaction stops counting too.
    this.transcriptCounts = new TranscriptCounts(
      input.messages,
      (message) => input.countTokens(serializeTranscript([message], input.bounds), { signal: input.signal }),
      this.pace,
    );
  }

  /**
   * Tokens of `prompt`. The prompt that decided the plan is usually the one sent (the plan counts
   * it, then fitting builds the same strings again): the last count is reused, not repeated on a
   * huge prompt.
   */
  async count(prompt: SummaryPrompt): Promise<number> {
    const last = this.lastCounted;
    if (last && last.prompt.system === prompt.system && last.prompt.user === prompt.user) return last.tokens;
    const tokens = await countPromptTokens(prompt, this.input.countTokens, this.input.signal);
    this.lastCounted = { prompt, tokens };
    return tokens;
  }

  /** Whether `prompt` fits `budget`: counted only when its byte bound does not already say so. */
  async fits(prompt: SummaryPrompt, budget: number): Promise<boolean> {
    // The prompt counted last (the plan's, fitted again before it is sent) needs no bound.
    if (this.lastCounted?.prompt === prompt) return this.lastCounted.tokens <= budget;
    return promptTokenBound(prompt) <= budget || (await this.count(prompt)) <= budget;
  }

  /**
   * The prompt for `chunk` (messages `range`) with the running summary `running`: file lists
   * bounded to the budget's share, the length note when the plan has a target.
   */
  async promptFor(
    range: Range,
    chunk: Message[],
    running: string | null,
    plan: FoldState,
  ): Promise<SummaryPrompt> {
    // The plan builds the prompt of the range it decides on, then fitting builds it again: the
    // same prompt (a whole window's transcript) is returned, not serialised twice.
    const last = this.lastBuilt;
    if (last && sameRequest(last, range, chunk, running, plan)) return last.prompt;
    const prompt = await this.buildPrompt(range, chunk, running, plan);
    this.lastBuilt = {
      range: { ...range },
      chunk,
      running,
      budget: plan.budget,
      target: plan.target,
      prompt,
    };
    return prompt;
  }

  private async buildPrompt(
    range: Range,
    chunk: Message[],
    running: string | null,
    plan: FoldState,
  ): Promise<SummaryPrompt> {
    const { input } = this;
    const whole = range.start === 0 && range.end === input.messages.length && running === null;
    // A split turn's prefix that needs several chunks is folded with the history update prompt:
    // core's turn-prefix prompt has no update form, and losing the earlier chunks would be worse.
    const chunkKind = input.kind === 'turn-prefix' && whole ? 'turn-prefix' : 'history';
    const earlierOps = await this.earlierFileOps(range.start);
    const fileOps = earlierOps ? mergeFileOps(input.fileOps, earlierOps) : input.fileOps;
    const prompt = buildSummaryPrompt({
      messages: chunk,
      previousSummary: running,
      instructions: input.instructions,
      fileOps: boundFileOps(fileOps, fileListMaxChars(plan.budget)),
      kind: chunkKind,
      ...(input.style === undefined ? {} : { style: input.style }),
      ...input.bounds,
    });
    const { target } = plan;
    return target === null ? prompt : { ...prompt, user: `${prompt.user}\n\n${summaryLengthNote(target)}` };
  }

  /** The prompt's fixed part: `promptFor` without messages. */
  async fixedTokens(range: Range, running: string | null, plan: FoldState): Promise<number> {
    return this.count(await this.promptFor(range, [], running, plan));
  }

  /**
   * The file ops of the messages before `start`, extended as the chunks move forward (each
   * message's once): rebuilt from the first message for every chunk's prompt they made a long
   * compaction quadratic, and they could not be with the earlier messages let go.
   */
  async earlierFileOps(start: number): Promise<FileOps | null> {
    if (start === 0) return null;
    const { messages } = this.input;
    if (start < this.opsUpTo) return extractFileOps(await messages.slice(0, start));
    if (start > this.opsUpTo) {
      this.opsBefore = mergeFileOps(
        this.opsBefore,
        extractFileOps(await messages.slice(this.opsUpTo, start)),
      );
      this.opsUpTo = start;
    }
    return this.opsBefore;
  }

  /** Messages `range` were summarised: take their file ops for the next prompt, then let them go. */
  async done(range: Range): Promise<void> {
    // The next request is another range: the chunk's messages are not held for a prompt of it.
    this.lastBuilt = null;
    // Only a prompt after `range` lists them, and there is none after the last message: the
    // file ops of a whole window (a second pass over every tool call) would be thrown away.
    if (range.end < this.input.messages.length) await this.earlierFileOps(range.end);
    this.input.messages.release(range.end);
    this.transcriptCounts.forget(range.start, range.end);
  }

  /** Stored tokens of the range (the source's own figure when it has one), for the first plan. */
  async storedTotal(): Promise<number> {
    const { source, offset } = this.input;
    if (source.storedTokens !== undefined) return source.storedTokens;
    let total = 0;
    for await (const window of source.windows(offset)) {
      total += storedTokens(window);
      await this.pace();
    }
    return total;
  }
}

/** A prompt {@link FoldPrompts.promptFor} built, and what it was built from. */
interface BuiltPrompt {
  range: Range;
  chunk: readonly Message[];
  running: string | null;
  budget: number;
  target: number | null;
  prompt: SummaryPrompt;
}

/**
 * Whether `built` is the prompt of this request: the same range, the same message objects (a
 * shrunk message is a new one), running summary, budget (it bounds the file lists) and length
 * target. The file ops of earlier messages follow from the range's start.
 */
function sameRequest(
  built: BuiltPrompt,
  range: Range,
  chunk: readonly Message[],
  running: string | null,
  plan: FoldState,
): boolean {
  return (
    built.range.start === range.start &&
    built.range.end === range.end &&
    built.running === running &&
    built.budget === plan.budget &&
    built.target === plan.target &&
    built.chunk.length === chunk.length &&
    built.chunk.every((message, i) => message === chunk[i])
  );
}
