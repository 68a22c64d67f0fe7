import type { Authenticator } from './http/auth';
import type { SessionJobs, SessionResources } from '@compactor/sessions';

/** Something that answers PING: the readiness probe's view of Redis. */
export interface RedisPing {
  ping(): Promise<string>;
}

/** Starting durable work for a session (see `@compactor/sessions`' `SessionJobs`). */
export type ApiJobs = SessionJobs;

/**
 * Everything the HTTP layer needs, passed explicitly (no module singletons): what session
 * operations use, plus the readiness probe's Redis and the authenticator.
 */
export interface ApiResources extends SessionResources {
  redis: RedisPing;
  auth: Authenticator;
}
