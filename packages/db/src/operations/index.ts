export * from './new-message';
export * from './append-messages';
export * from './patch-message';
export * from './load-messages';
export * from './complete-compaction';
export * from './revert-compaction';
export * from './clamp-parts';
export * from './purge-retention';
