export * from './resources';
export * from './errors';
export * from './session-events';
export * from './active-compaction-limit-error';
export * from './request-compaction';
export * from './start-deferred-compaction';
export * from './compaction-view';
export * from './run-compaction';
export * from './prune-session';
export * from './prepare-summary';
export * from './stored-policy';
// A prepared draft as the compaction that finalizes it reads it (the context route serves drafts too).
export { preparedSettingsKey } from './steps/prepared-draft';
export { parseSummaryDraft, type SummaryOutcome } from './steps/summary-writing';
