// The drop-in endpoints' pure half: client requests as hash-chained elements, their writes, the
// served context in each provider's shape, and provider answers as stored messages.
export * from './input-error';
export * from './chain-hash';
export * from './elements';
export * from './element-memo';
export * from './suffix-writes';
export * from './answer';
export * from './openai-elements';
export * from './openai-answer';
export * from './anthropic-metadata';
export * from './anthropic-elements';
export * from './anthropic-render';
export * from './anthropic-answer';
export * from './anthropic-cache';
