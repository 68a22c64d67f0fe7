// The HTTP API's wire contract: zod schemas of every request and response, the event payloads and
// the error body. The API validates with them and serves them as OpenAPI; clients type with them.
export * from './primitives';
export * from './errors';
export * from './policy';
export * from './vocabulary';
export * from './messages';
export * from './compactions';
export * from './overflow';
export * from './sessions';
export * from './message-writes';
export * from './context';
export * from './events';
export * from './health';
