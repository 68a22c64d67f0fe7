export * from './workflow/resources';
export * from './workflow/errors';
export * from './workflow/request-compaction';
export * from './workflow/compaction-view';
export * from './workflow/run-compaction';
