// The artifact ledger, pure: extraction from a compacted range, merging across compactions,
// rendering within a budget, and the classifiers beneath them (for recall's argument index).
export {
  emptyLedger,
  MAX_LEDGER_COMMAND_CHARS,
  MAX_LEDGER_EVIDENCE_CHARS,
  MAX_LEDGER_FACT_CHARS,
  MAX_LEDGER_PATH_CHARS,
  type ArtifactLedger,
  type CommandOutcome,
  type LedgerCommand,
  type LedgerFact,
  type LedgerFactKind,
  type LedgerFile,
  type LedgerFileKind,
  type LedgerOpenError,
} from './types';
export { ledgerOfMessages, type LedgerOptions } from './extract';
export { combineFileEffects, mergeLedgers, openErrorsOf, type FileEffect } from './merge';
export {
  LEDGER_HEADING,
  LEDGER_OVERFLOW_LEAD,
  LEDGER_RECALL_CALLS,
  ledgerOverflowLine,
  MAX_RENDERED_ENTRY_CHARS,
  renderLedger,
  type LedgerRecallKind,
  type RenderLedgerOptions,
} from './render';
export {
  artifactsOfToolPart,
  LEDGER_FILE_TOOLS,
  normaliseCommand,
  SHELL_TOOLS,
  type RanCommand,
  type ToolCallArtifacts,
  type ToolCallClass,
} from './tool-calls';
export { fileOpsInPatchBody, type LedgerFileOp } from './patch';
export { fileOpsOfShellCommand } from './shell-files';
export { statedOutcome, testRunnerOf, type StatedOutcome } from './command-outcome';
export { factsInText, type FoundFact } from './facts';
export { expandPathGroup, groupPaths } from './group-paths';
export { directoriesInRenderedLedger, pathsInRenderedLedger } from './read-rendered';
export { directoryCovers, sharedDirectories } from './directory-cover';
export {
  ArtifactLedgerSchema,
  LedgerCommandSchema,
  LedgerFactSchema,
  LedgerFileSchema,
  LedgerOpenErrorSchema,
  ledgerFromStored,
} from './schema';
