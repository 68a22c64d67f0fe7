export * from './sessions';
export * from './messages';
export * from './parts';
export * from './compactions';
export * from './context-tokens';
export * from './api-keys';
export * from './health';
export * from './compaction-lifecycle';
