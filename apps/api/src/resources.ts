import type { Authenticator } from './http/auth';
import type { Db, TokenCounter } from '@compactor/db';

/** Something that answers PING: the readiness probe's view of Redis. */
export interface RedisPing {
  ping(): Promise<string>;
}

/** Everything the HTTP layer needs, passed explicitly (no module singletons). */
export interface ApiResources {
  db: Db;
  redis: RedisPing;
  auth: Authenticator;
  /** The exact token counter for a session's model (its encoding). */
  tokenizerFor(modelId: string): TokenCounter;
  clock: () => Date;
}
