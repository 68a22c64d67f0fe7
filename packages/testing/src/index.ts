import './provided-context';
export * from './database';
export * from './queue';
export * from './recording-server';
export * from './tcp-proxy';
export * from './private-postgres';
