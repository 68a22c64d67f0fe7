// Public surface of @compactor/core. One `export *` line per module; keep it sorted by topic.
export * from './model';
