// The artifact ledger: extraction, merging and rendering, pure.
export * from './types';
export * from './patch';
export * from './shell-words';
export * from './shell-files';
export * from './command-outcome';
export * from './tool-calls';
export * from './facts';
export * from './merge';
export * from './extract';
export * from './group-paths';
export * from './render';
