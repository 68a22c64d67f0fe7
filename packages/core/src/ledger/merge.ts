/**
 * Merging the ledger a session carries with the ledger of the range a new compaction covers.
 * Stored whole: nothing is dropped for size (the renderer bounds what is shown). Idempotent:
 * merging a ledger that is already in (a retried compaction, the same range twice) changes
 * nothing, because a newer entry whose runs all fall within what the older ledger covered
 * (`throughSeq`) is not counted again.
 */
import type { ArtifactLedger, LedgerCommand, LedgerFact, LedgerFile, LedgerOpenError } from './types';

/** What a run of calls did to one file: its kind, and whether it was deleted and written again. */
export type FileEffect = Pick<LedgerFile, 'kind' | 'recreated'>;

/**
 * What a file is after `earlier` then `later`, each the effect of a run of calls. A read changes
 * nothing already known; a write or edit of a file the session had read or modified modifies it,
 * of one it created leaves it created, of one it deleted recreates it; a deletion is final until
 * the next write. Each effect stands for a function from the file's earlier state to its later
 * one, and this composes them, so it is associative: merging the ledgers of consecutive ranges
 * gives what extracting them together gives, however the session was cut.
 */
export function combineFileEffects(earlier: FileEffect, later: FileEffect): FileEffect {
  if (later.kind === 'deleted') return { kind: 'deleted' };
  if (later.recreated) return { kind: 'created', recreated: true };
  if (later.kind === 'read')
    return earlier.recreated ? { kind: earlier.kind, recreated: true } : { kind: earlier.kind };
  switch (earlier.kind) {
    case 'read':
    case 'modified':
      return { kind: 'modified' };
    case 'created':
      return earlier.recreated ? { kind: 'created', recreated: true } : { kind: 'created' };
    case 'deleted':
      return { kind: 'created', recreated: true };
  }
}

/** `file` with the effect's kind and flag (the flag absent unless set, so stored JSON stays minimal). */
export function withFileEffect<T extends LedgerFile>(file: T, effect: FileEffect): T {
  const { recreated: _, ...rest } = file;
  return { ...rest, kind: effect.kind, ...(effect.recreated ? { recreated: true as const } : {}) } as T;
}

/**
 * Failures still open, newest first: a failed command with no later passing run of the same
 * command (its entry keeps only its last outcome) or of the same test runner.
 */
export function openErrorsOf(commands: readonly LedgerCommand[]): LedgerOpenError[] {
  const lastPassByRunner = new Map<string, number>();
  for (const command of commands) {
    if (command.outcome !== 'passed' || command.runner === undefined) continue;
    lastPassByRunner.set(
      command.runner,
      Math.max(lastPassByRunner.get(command.runner) ?? 0, command.lastSeq),
    );
  }
  return commands
    .filter(
      (command) =>
        command.outcome === 'failed' &&
        (command.runner === undefined || (lastPassByRunner.get(command.runner) ?? 0) <= command.lastSeq),
    )
    .map((command) => ({
      command: command.command,
      seq: command.lastSeq,
      ...(command.exitCode !== undefined ? { exitCode: command.exitCode } : {}),
      ...(command.evidence !== undefined ? { evidence: command.evidence } : {}),
    }));
}

interface Counted {
  firstSeq: number;
  lastSeq: number;
  count: number;
}

/**
 * `older` and `newer` entries by key, newest first: by `lastSeq`, and within one message by the
 * order of the ledger that holds the entry's last touch (both ledgers cover a message whole, so
 * entries of one message always come from the same one). `combine(old, new)` builds the entry
 * both name from its fields.
 */
function mergeEntries<T extends Counted>(
  older: readonly T[],
  newer: readonly T[],
  olderThrough: number,
  key: (entry: T) => string,
  combine: (old: T, next: T) => T,
): T[] {
  const olderByKey = new Map(older.map((entry, index) => [key(entry), { entry, index }]));
  const merged: { entry: T; rank: number }[] = [];
  const seen = new Set<string>();
  newer.forEach((next, index) => {
    const id = key(next);
    seen.add(id);
    const old = olderByKey.get(id);
    if (old === undefined) {
      merged.push({ entry: next, rank: index });
      return;
    }
    // Runs the older ledger covered entirely are in it already (its kind composed them in order):
    // composing them again, out of order, would read a later write as coming after a read.
    if (next.lastSeq <= olderThrough && next.lastSeq <= old.entry.lastSeq) {
      merged.push({ entry: old.entry, rank: old.index });
      return;
    }
    const newerIsLatest = next.lastSeq >= old.entry.lastSeq;
    // Runs the older ledger already counted are not counted twice.
    const disjoint = next.firstSeq > olderThrough;
    merged.push({
      entry: {
        ...(newerIsLatest ? combine(old.entry, next) : combine(next, old.entry)),
        firstSeq: Math.min(old.entry.firstSeq, next.firstSeq),
        lastSeq: Math.max(old.entry.lastSeq, next.lastSeq),
        count: disjoint ? old.entry.count + next.count : Math.max(old.entry.count, next.count),
      },
      rank: newerIsLatest ? index : old.index,
    });
  });
  older.forEach((entry, index) => {
    if (!seen.has(key(entry))) merged.push({ entry, rank: index });
  });
  return merged
    .sort((a, b) => b.entry.lastSeq - a.entry.lastSeq || a.rank - b.rank)
    .map(({ entry }) => entry);
}

/** A command's last run decides its outcome: the newer entry replaces the older's fields whole. */
const laterCommand = (_: LedgerCommand, next: LedgerCommand): LedgerCommand => ({ ...next });
const laterFact = (_: LedgerFact, next: LedgerFact): LedgerFact => ({ ...next });
const laterFile = (old: LedgerFile, next: LedgerFile): LedgerFile =>
  withFileEffect(next, combineFileEffects(old, next));

/**
 * `older` (what the session carried) with `newer` (the range a compaction just covered) merged
 * in: every entry of both, one per path / command / fact, newest first.
 */
export function mergeLedgers(older: ArtifactLedger, newer: ArtifactLedger): ArtifactLedger {
  const through = older.throughSeq;
  const commands = mergeEntries(older.commands, newer.commands, through, (c) => c.command, laterCommand);
  return {
    version: 1,
    throughSeq: Math.max(older.throughSeq, newer.throughSeq),
    files: mergeEntries(older.files, newer.files, through, (f) => f.path, laterFile),
    commands,
    facts: mergeEntries(older.facts, newer.facts, through, (f) => `${f.kind}\u0000${f.text}`, laterFact),
    openErrors: openErrorsOf(commands),
  };
}
