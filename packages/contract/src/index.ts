// The HTTP API's wire contract: zod schemas of every request and response, the event payloads and
// the error body. The API validates with them and serves them as OpenAPI; clients type with them.
export * from './primitives.js';
export * from './errors.js';
export * from './policy.js';
export * from './vocabulary.js';
export * from './messages.js';
export * from './media.js';
export * from './cache-effect.js';
export * from './compactions.js';
export * from './overflow.js';
export * from './sessions.js';
export * from './compaction-revert.js';
export * from './message-writes.js';
export * from './context.js';
export * from './recall.js';
export * from './recall-tool.js';
export * from './events.js';
export * from './health.js';
export * from './recall-ledger.js';
export * from './tasks.js';
