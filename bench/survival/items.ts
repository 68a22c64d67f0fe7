/**
 * What an agent should still know after a compaction, read from the transcript up to it: the
 * items of each class the survival benchmark checks. Files and commands are core's ledger
 * extraction over the whole prefix (the tool calls' inputs and patch bodies); user facts and
 * constraints come from the user's own words only (core `userWords`: harness text is not the
 * user's), so the benchmark measures what a user said, not what the agent's harness injected.
 * Pure: no I/O.
 */
import {
  constraintSentences,
  factsInText,
  ledgerOfMessages,
  userWords,
  type FileToolNames,
} from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import { asStored } from '../../apps/replay/src/probes/retention';

export const SURVIVAL_CLASSES = ['files', 'commands', 'facts', 'constraints', 'latest'] as const;
export type SurvivalClass = (typeof SURVIVAL_CLASSES)[number];

/** Column headings of the table, one per class. */
export const CLASS_LABELS: Record<SurvivalClass, string> = {
  files: 'file paths',
  commands: 'commands',
  facts: 'user facts',
  constraints: 'constraints',
  latest: 'latest request',
};

export interface SurvivalItems {
  files: string[];
  /** The files the session modified, created or deleted (a subset of `files`). */
  modifiedFiles: string[];
  commands: string[];
  facts: string[];
  constraints: string[];
  /** The latest request's own words, or none when no user message had any. */
  latest: string[];
}

/** Longer "sentences" are pasted logs or code, not something a user asked for (as the replay's probes). */
const MAX_CONSTRAINT_CHARS = 300;

/** The user's own words in a message (`''` for other roles and for harness-only text). */
export function ownWords(message: MessageInput): string {
  if (message.role !== 'user') return '';
  return userWords(message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n'));
}

const unique = (values: Iterable<string>): string[] => [...new Set(values)];

/** The items of every class in `messages` (the transcript up to a compaction). */
export function survivalItems(messages: readonly MessageInput[], fileTools?: FileToolNames): SurvivalItems {
  const ledger = ledgerOfMessages(messages.map(asStored), fileTools ? { fileTools } : {});
  const words = messages.map(ownWords);
  const latest = words.findLast((w) => w.trim() !== '');
  return {
    files: ledger.files.map((f) => f.path),
    modifiedFiles: ledger.files.filter((f) => f.kind !== 'read').map((f) => f.path),
    commands: ledger.commands.map((c) => c.command),
    facts: unique(words.flatMap((w) => factsInText(w).map((f) => f.text))),
    constraints: unique(
      words.flatMap((w) => constraintSentences(w).filter((s) => s.length <= MAX_CONSTRAINT_CHARS)),
    ),
    latest: latest === undefined ? [] : [latest.trim()],
  };
}
