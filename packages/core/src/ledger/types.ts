/**
 * The artifact ledger: what a session touched (files, commands, the facts its user stated, the
 * errors still open), extracted deterministically from the messages a compaction covers and
 * merged across compactions. It is plain JSON so it can be stored whole (one column or one row per
 * entry) and bounded only where it is rendered.
 *
 * Recency is the message `seq`: per session and strictly increasing, so it orders entries of
 * ranges that different compactions extracted. Every list is newest first.
 */

/** What the session did to a file, the strongest thing it did: created or deleted over modified over read. */
export type LedgerFileKind = 'read' | 'modified' | 'created' | 'deleted';

/** One file, as a tool call named it (not resolved: `src/a.ts` and `./src/a.ts` are two entries). */
export interface LedgerFile {
  path: string;
  kind: LedgerFileKind;
  /**
   * Deleted and then written again within what this entry covers (its kind is then `created`,
   * whatever came before): kept so that merging a later range gives what extracting the whole
   * session at once would (see `combineFileEffects`).
   */
  recreated?: true;
  /** `seq` of the message holding the first and last call that touched it. */
  firstSeq: number;
  lastSeq: number;
  /** How many tool calls touched it. */
  count: number;
}

/** What a command's output says about how it ended; `unknown` when it says nothing recognisable. */
export type CommandOutcome = 'passed' | 'failed' | 'unknown';

/** One distinct command (normalised), with the outcome of its last run. */
export interface LedgerCommand {
  command: string;
  outcome: CommandOutcome;
  /** The exit status when the output or the tool states one. */
  exitCode?: number;
  /** The output line that stated the outcome (`Tests: 3 failed`, `exit code 2`), capped. */
  evidence?: string;
  /** The test runner it invokes (`vitest`, `go test`, …), which lets a pass of one run close another's failure. */
  runner?: string;
  firstSeq: number;
  lastSeq: number;
  count: number;
}

/** The kinds of facts taken from the user's own words. */
export type LedgerFactKind = 'identifier' | 'path' | 'version' | 'quantity' | 'url';

/** One fact the user stated, as written. */
export interface LedgerFact {
  kind: LedgerFactKind;
  text: string;
  firstSeq: number;
  lastSeq: number;
  count: number;
}

/** A failing command not followed by a passing run of the same command or the same test runner. */
export interface LedgerOpenError {
  command: string;
  seq: number;
  exitCode?: number;
  evidence?: string;
}

/**
 * The ledger of one range of messages, or of a whole session after merging. `throughSeq`: the
 * newest message seq it covers (0 for none); merging uses it to tell a range it already counted
 * from a new one, which is what makes merging idempotent.
 */
export interface ArtifactLedger {
  version: 1;
  throughSeq: number;
  files: LedgerFile[];
  commands: LedgerCommand[];
  facts: LedgerFact[];
  /** Derived from `commands` (see `openErrorsOf`), stored so readers need not recompute it. */
  openErrors: LedgerOpenError[];
}

/** Longest path kept: no real file has a longer one, and a tool argument that does is not a path. */
export const MAX_LEDGER_PATH_CHARS = 1_000;
/** Longest command kept; longer ones (heredocs, inline scripts) are cut to this many characters. */
export const MAX_LEDGER_COMMAND_CHARS = 2_000;
/** Longest fact or evidence line kept. */
export const MAX_LEDGER_FACT_CHARS = 300;
export const MAX_LEDGER_EVIDENCE_CHARS = 200;

/** A ledger that knows nothing. */
export function emptyLedger(): ArtifactLedger {
  return { version: 1, throughSeq: 0, files: [], commands: [], facts: [], openErrors: [] };
}

/** `text` cut to `max` characters (never inside a surrogate pair), with `…` when cut. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}
