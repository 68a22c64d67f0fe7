export * from './sessions';
export * from './messages';
export * from './parts';
export * from './part-prunes';
export * from './part-clamps';
export * from './compactions';
export * from './api-keys';
export * from './outbox';
