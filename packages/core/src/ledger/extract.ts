/**
 * The ledger of a range of messages: every tool call's files and commands, and the facts in the
 * user's own words. Deterministic: the same messages give the same ledger, byte for byte.
 */
import type { FileToolNames } from '../file-ops';
import { userWords as ownWordsOf } from '../harness-text';
import type { Message } from '../model';
import { factsInText } from './facts';
import { statedOutcome, testRunnerOf } from './command-outcome';
import { combineFileEffects, openErrorsOf, withFileEffect } from './merge';
import { artifactsOfToolPart } from './tool-calls';
import type { ArtifactLedger, LedgerCommand, LedgerFact, LedgerFile } from './types';

/** How {@link ledgerOfMessages} reads messages. */
export interface LedgerOptions {
  /** The policy's file tools (read / write / edit names); the ledger's own tables add to them. */
  fileTools?: FileToolNames;
  /**
   * The user's own words in a user message, without text an agent harness injected there
   * (environment blocks, command caveats, reminders): facts come from these only.
   * @defaultValue the message's text parts without harness text (core `userWords`)
   */
  userWords?: (message: Message) => string;
}

/** Every text part of `message`, one per line. */
export function textOfMessage(message: Message): string {
  return message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/** Entries by key, newest last; turned into a newest-first list at the end. */
type Entries<T> = Map<string, T>;

function touch<T extends { firstSeq: number; lastSeq: number; count: number }>(
  entries: Entries<T>,
  key: string,
  seq: number,
  fresh: () => T,
  update: (entry: T) => T,
): void {
  const entry = entries.get(key);
  if (entry === undefined) {
    entries.set(key, fresh());
    return;
  }
  entries.delete(key); // re-inserted last: Map order is recency order.
  entries.set(key, { ...update(entry), firstSeq: entry.firstSeq, lastSeq: seq, count: entry.count + 1 });
}

const newestFirst = <T>(entries: Entries<T>): T[] => [...entries.values()].reverse();

/** The artifact ledger of `messages` (the range one compaction covers, or a whole session). */
export function ledgerOfMessages(messages: readonly Message[], options: LedgerOptions = {}): ArtifactLedger {
  const userWords = options.userWords ?? ((message: Message) => ownWordsOf(textOfMessage(message)));
  const files: Entries<LedgerFile> = new Map();
  const commands: Entries<LedgerCommand> = new Map();
  const facts: Entries<LedgerFact> = new Map();
  let throughSeq = 0;
  for (const message of messages) {
    const seq = message.seq;
    throughSeq = Math.max(throughSeq, seq);
    if (message.role === 'user' && !message.summary) {
      for (const fact of factsInText(userWords(message))) {
        touch(
          facts,
          `${fact.kind}\u0000${fact.text}`,
          seq,
          () => ({ ...fact, firstSeq: seq, lastSeq: seq, count: 1 }),
          (entry) => entry,
        );
      }
    }
    for (const part of message.parts) {
      if (part.type !== 'tool') continue;
      const artifacts = artifactsOfToolPart(part, options.fileTools);
      for (const op of artifacts.files) {
        touch(
          files,
          op.path,
          seq,
          () => ({ path: op.path, kind: op.kind, firstSeq: seq, lastSeq: seq, count: 1 }),
          (entry) => withFileEffect(entry, combineFileEffects(entry, { kind: op.kind })),
        );
      }
      const ran = artifacts.command;
      if (ran === null) continue;
      const stated = statedOutcome(ran.output, ran.failedCall);
      const runner = testRunnerOf(ran.command);
      const fresh = (): LedgerCommand => ({
        command: ran.command,
        outcome: stated.outcome,
        ...(stated.exitCode !== undefined ? { exitCode: stated.exitCode } : {}),
        ...(stated.evidence !== undefined ? { evidence: stated.evidence } : {}),
        ...(runner !== undefined ? { runner } : {}),
        firstSeq: seq,
        lastSeq: seq,
        count: 1,
      });
      // The last run's outcome replaces the earlier one's whole (an old exit code must not linger).
      touch(commands, ran.command, seq, fresh, fresh);
    }
  }
  const commandList = newestFirst(commands);
  return {
    version: 1,
    throughSeq,
    files: newestFirst(files),
    commands: commandList,
    facts: newestFirst(facts),
    openErrors: openErrorsOf(commandList),
  };
}
