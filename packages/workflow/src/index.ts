export * from './resources';
export * from './errors';
export * from './session-events';
export * from './active-compaction-limit-error';
export * from './request-compaction';
export * from './compaction-view';
export * from './run-compaction';
export * from './prune-session';
