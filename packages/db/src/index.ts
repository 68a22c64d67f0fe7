export * from './client';
export * from './migrate';
export * from './errors';
export * from './ids';
export * from './mappers';
export * from './queries';
export * from './operations';
export * as schema from './schema';
