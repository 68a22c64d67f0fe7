// Public surface of @compactor/stack: the real system as local processes (the demo, the replay).
export { Children, ChildExitedError, type Child, type ChildLogLine } from './children';
export { followEvents, type FollowedEvents } from './follow-events';
export {
  checkPostgres,
  checkRedis,
  deleteQueueKeys,
  dropDatabase,
  recreateScratchDatabase,
  ServiceMissingError,
  withDatabase,
} from './services';
export { PlacementError, runStamp, scratchPlacement, type ScratchPlacement } from './scratch-placement';
export { startStack, type Stack, type StackOptions, type StackProvider } from './start';
