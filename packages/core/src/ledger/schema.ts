/**
 * The stored ledger's shape, checked where it is read back (a JSON column, a row per entry): a
 * value this code did not write, or that an older or newer version wrote, is refused rather than
 * merged, so a bad row can never reach a rendered context.
 */
import { z } from 'zod';
import {
  MAX_LEDGER_COMMAND_CHARS,
  MAX_LEDGER_EVIDENCE_CHARS,
  MAX_LEDGER_FACT_CHARS,
  MAX_LEDGER_PATH_CHARS,
  type ArtifactLedger,
} from './types';

const seq = z.number().int().nonnegative();
const counted = { firstSeq: seq, lastSeq: seq, count: z.number().int().positive() };
const evidence = z.string().max(MAX_LEDGER_EVIDENCE_CHARS).optional();
const exitCode = z.number().int().optional();

export const LedgerFileSchema = z.object({
  path: z.string().min(1).max(MAX_LEDGER_PATH_CHARS),
  kind: z.enum(['read', 'modified', 'created', 'deleted']),
  recreated: z.literal(true).optional(),
  ...counted,
});

export const LedgerCommandSchema = z.object({
  command: z.string().min(1).max(MAX_LEDGER_COMMAND_CHARS),
  outcome: z.enum(['passed', 'failed', 'unknown']),
  exitCode,
  evidence,
  runner: z.string().max(100).optional(),
  ...counted,
});

export const LedgerFactSchema = z.object({
  kind: z.enum(['identifier', 'path', 'version', 'quantity', 'url']),
  text: z.string().min(1).max(MAX_LEDGER_FACT_CHARS),
  ...counted,
});

export const LedgerOpenErrorSchema = z.object({
  command: z.string().min(1).max(MAX_LEDGER_COMMAND_CHARS),
  seq,
  exitCode,
  evidence,
});

export const ArtifactLedgerSchema = z.object({
  version: z.literal(1),
  throughSeq: seq,
  files: z.array(LedgerFileSchema),
  commands: z.array(LedgerCommandSchema),
  facts: z.array(LedgerFactSchema),
  openErrors: z.array(LedgerOpenErrorSchema),
});

/** A stored ledger as written by {@link ArtifactLedgerSchema}'s rules, or `null` for anything else. */
export function ledgerFromStored(value: unknown): ArtifactLedger | null {
  const parsed = ArtifactLedgerSchema.safeParse(value);
  if (!parsed.success) return null;
  // Optional fields absent, not `undefined`: the parsed ledger serialises as the stored one did.
  return JSON.parse(JSON.stringify(parsed.data)) as ArtifactLedger;
}
