export * from './client';
export * from './breaker';
export * from './tenant-shares';
export * from './migrate';
export * from './errors';
export * from './ids';
export * from './hashing';
export * from './ingest';
export * from './mappers';
export * from './queries';
// The context view's versioned read (the sessions package's context memo).
export * from './queries/context-delta';
export * from './operations';
export * as schema from './schema';
export * from './scratch-database';
export * from './media';
// The sessions package's context test seeds by session pk through this name; every other test
// imports appendTestMessages from @compactor/db/testing.
