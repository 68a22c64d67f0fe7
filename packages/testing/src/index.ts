import './provided-context';
export * from './database';
export * from './queue';
export * from './session';
