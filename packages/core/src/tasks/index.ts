// Sub-agents and background tasks: which calls are tasks, their records, the block, its check.
export * from './task-tools';
export * from './record';
export * from './block';
export * from './verify';
export * from './delivery';
