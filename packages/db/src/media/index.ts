// Media objects: stored once per tenant by SHA-256, referenced by file parts, resolved when served.
export * from './references';
export * from './store';
export * from './resolve';
export * from './recall';
export * from './orphans';
