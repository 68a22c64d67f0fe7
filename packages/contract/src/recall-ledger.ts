/**
 * `GET /v1/sessions/:id/recall?kind=files|commands|facts`: one section of the session's artifact
 * ledger, whole — what every compaction so far covered, extracted from the tool calls and the
 * user's own words. The summary lists what fits its budget and names the rest by count with this
 * call; this is where the rest is.
 */
import { z } from 'zod';

/** The ledger sections recall lists, as the summary's overflow line names them. */
export const RECALL_LEDGER_KINDS = ['files', 'commands', 'facts'] as const;
export type RecallLedgerKind = (typeof RECALL_LEDGER_KINDS)[number];

/** The most entries one page returns; and how many when `limit` is left out. */
export const MAX_RECALL_LEDGER_LIMIT = 500;
export const DEFAULT_RECALL_LEDGER_LIMIT = 100;

const recency = {
  firstSeq: z.number().int().describe('Seq of the first message that touched it'),
  lastSeq: z.number().int().describe('Seq of the last message that touched it'),
  count: z.number().int().describe('How many calls (or user messages) named it'),
};

const LedgerFileEntry = z.object({
  path: z.string().describe('As the tool call named it (not resolved)'),
  kind: z.enum(['read', 'modified', 'created', 'deleted']).describe('The strongest thing done to it'),
  ...recency,
});

const LedgerCommandEntry = z.object({
  command: z.string(),
  outcome: z.enum(['passed', 'failed', 'unknown']).describe('How its last run ended, as its output said'),
  exitCode: z.number().int().optional(),
  evidence: z.string().optional().describe('The output line that stated the outcome'),
  ...recency,
});

const LedgerFactEntry = z.object({
  kind: z.enum(['identifier', 'path', 'version', 'quantity', 'url']),
  text: z.string().describe('As the user wrote it'),
  ...recency,
});

const LedgerOpenError = z.object({
  command: z.string(),
  seq: z.number().int(),
  exitCode: z.number().int().optional(),
  evidence: z.string().optional(),
});

export const RecallLedgerFields = z.object({
  kind: z.literal('ledger'),
  section: z.enum(RECALL_LEDGER_KINDS),
  entries: z
    .array(z.union([LedgerFileEntry, LedgerCommandEntry, LedgerFactEntry]))
    .describe('Newest first: files (section files), commands (commands) or stated facts (facts)'),
  total: z.number().int().describe('Entries in the whole section'),
  nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last'),
  openErrors: z
    .array(LedgerOpenError)
    .optional()
    .describe('Section commands: failed commands not passed since, newest first'),
  unlistedConstraints: z
    .array(z.string())
    .optional()
    .describe("Section facts: the user's constraints the summary's pinned section had no room for"),
  throughSeq: z.number().int().describe('The newest message seq the ledger covers (0: no compaction yet)'),
});

export const recallLedgerExample: z.output<typeof RecallLedgerFields> = {
  kind: 'ledger',
  section: 'files',
  entries: [
    { path: 'src/billing/export.ts', kind: 'modified', firstSeq: 4, lastSeq: 31, count: 3 },
    { path: 'src/billing/csv.ts', kind: 'read', firstSeq: 2, lastSeq: 2, count: 1 },
  ],
  total: 2,
  nextCursor: null,
  throughSeq: 40,
};

/** One section of the session's artifact ledger, newest first, a page at a time. */
export const RecallLedger = RecallLedgerFields.meta({ id: 'RecallLedger', examples: [recallLedgerExample] });
/** A ledger section as a client receives it. */
export type RecallLedger = z.output<typeof RecallLedger>;

/** The opaque cursor of a ledger page: the index of its first entry. */
export function ledgerCursor(offset: number): string {
  return `o${offset}`;
}

/** The index a cursor names, or `null` when it is not one this API wrote. */
export function ledgerCursorOffset(cursor: string): number | null {
  const match = /^o(\d{1,9})$/.exec(cursor);
  return match ? Number(match[1]) : null;
}
