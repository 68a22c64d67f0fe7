// Public surface of @compactor/sessions: what a session does, for the API's routes to call.
export * from './answers';
export * from './compactions';
export { waitForCompactionEnd } from './compaction-wait';
export * from './compaction-revert';
export * from './context';
export { ContextMemos, contextMemos } from './context-memo';
export * from './errors';
export * from './event-stream';
export * from './messages';
export * from './history-page';
export { keyedIdPrefix } from './keyed-message-ids';
export * from './recall';
export * from './resources';
export * from './sessions';
export { sessionStatus, statusSnapshot, type PrefetchedStatus, type StatusSnapshot } from './status';
export * from './tenant-limits';
export { compactionStepView, compactionView } from './views';
export * from './tasks';
