// Public surface of @compactor/stack: the real system as local processes (the demo, the replay).
export { Children, ChildExitedError, type Child, type ChildLogLine } from './children';
export { apiClient, ApiError, type ApiCall, type Json } from './client';
export {
  checkPostgres,
  checkRedis,
  deleteQueueKeys,
  dropDatabase,
  recreateScratchDatabase,
  ServiceMissingError,
  withDatabase,
} from './services';
export { PlacementError, scratchPlacement, type ScratchPlacement } from './scratch-placement';
export { openEventStream, type EventStream, type SessionEventMessage } from './sse';
export { startStack, type Stack, type StackOptions, type StackProvider } from './start';
