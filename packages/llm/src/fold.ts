/**
 * What a fold of `summarizeMessages` carries from request to request, shared by its entry point
 * (chunked-summary.ts), the planning of the next request (fold-next-request.ts) and the request
 * loop (fold-loop.ts).
 */
import { stripFileOpsBlocks } from '@compactor/core';
import type { LlmSpend } from './errors';
import type { FoldLimits } from './fold-plan';
import type { FoldPrompts } from './fold-prompts';
import type { MessageWindow } from './message-source';
import type { SummarizerSettings } from './settings';
import type { SummarizeDeps } from './summarize';

/** One fold in flight: what it works on, its fixed figures, and what it has spent so far. */
export interface Fold {
  readonly deps: SummarizeDeps;
  readonly settings: SummarizerSettings;
  readonly signal: AbortSignal | undefined;
  /** The range without the leading summary messages the previous summary stands for. */
  readonly messages: MessageWindow;
  /** How many leading summary messages of the input `messages` leaves out. */
  readonly offset: number;
  readonly prompts: FoldPrompts;
  readonly limits: FoldLimits;
  /** The transcript's bounds on tool results and arguments (the settings'). */
  readonly bounds: { toolResultMaxChars: number; toolArgsMaxChars: number };
  /** Summed over every answered request; read by `summarizeMessages` when an error escapes. */
  readonly spend: { total: LlmSpend };
}

/** What the fold has written so far. */
export interface FoldProgress {
  /** The running summary as the next request carries it (see {@link carry}). */
  readonly running: string | null;
  /** The last valid answer, as returned. */
  readonly text: string;
  readonly chunks: number;
  readonly model: string;
}

/** The running summary as the next request carries it: without file-op blocks (core appends those). */
export function carry(summary: string | null): string | null {
  return summary === null ? null : stripFileOpsBlocks(summary) || null;
}
