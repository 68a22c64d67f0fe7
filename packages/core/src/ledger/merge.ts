/**
 * Merging the ledger a session carries with the ledger of the range a new compaction covers.
 * Stored whole: nothing is dropped for size (the renderer bounds what is shown). Idempotent:
 * merging a ledger that is already in (a retried compaction, the same range twice) changes
 * nothing, because a newer entry whose runs all fall within what the older ledger covered
 * (`throughSeq`) is not counted again.
 */
import type {
  ArtifactLedger,
  LedgerCommand,
  LedgerFact,
  LedgerFile,
  LedgerFileKind,
  LedgerOpenError,
} from './types';

/**
 * What a file is after `earlier` then `later`: a read changes nothing already known; writing a
 * file the session had seen modifies it, writing one it had not (or had deleted) creates it; an
 * edit of a file created in the session leaves it created; a deletion is final until a new write.
 */
export function combineFileKinds(earlier: LedgerFileKind, later: LedgerFileKind): LedgerFileKind {
  switch (later) {
    case 'read':
      return earlier;
    case 'modified':
      return earlier === 'created' ? 'created' : 'modified';
    case 'created':
      return earlier === 'read' || earlier === 'modified' ? 'modified' : 'created';
    case 'deleted':
      return 'deleted';
  }
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
 * `older` and `newer` entries by key, newest first (by `lastSeq`; on a tie newer's order, then
 * older's). `combine(old, new)` builds the entry both name from its fields.
 */
function mergeEntries<T extends Counted>(
  older: readonly T[],
  newer: readonly T[],
  olderThrough: number,
  key: (entry: T) => string,
  combine: (old: T, next: T) => T,
): T[] {
  const olderByKey = new Map(older.map((entry) => [key(entry), entry]));
  const merged: T[] = [];
  const seen = new Set<string>();
  for (const next of newer) {
    const id = key(next);
    seen.add(id);
    const old = olderByKey.get(id);
    if (old === undefined) {
      merged.push(next);
      continue;
    }
    // Runs the older ledger already counted are not counted twice.
    const disjoint = next.firstSeq > olderThrough;
    const latest = next.lastSeq >= old.lastSeq ? combine(old, next) : combine(next, old);
    merged.push({
      ...latest,
      firstSeq: Math.min(old.firstSeq, next.firstSeq),
      lastSeq: Math.max(old.lastSeq, next.lastSeq),
      count: disjoint ? old.count + next.count : Math.max(old.count, next.count),
    });
  }
  for (const old of older) if (!seen.has(key(old))) merged.push(old);
  return merged
    .map((entry, index) => ({ entry, index }))
    .sort((a, b) => b.entry.lastSeq - a.entry.lastSeq || a.index - b.index)
    .map(({ entry }) => entry);
}

/** A command's last run decides its outcome: the newer entry replaces the older's fields whole. */
const laterCommand = (_: LedgerCommand, next: LedgerCommand): LedgerCommand => ({ ...next });
const laterFact = (_: LedgerFact, next: LedgerFact): LedgerFact => ({ ...next });
const laterFile = (old: LedgerFile, next: LedgerFile): LedgerFile => ({
  ...next,
  kind: combineFileKinds(old.kind, next.kind),
});

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
