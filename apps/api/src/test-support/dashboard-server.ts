import type { TestDatabase } from '@compactor/db/testing';
import type { ServerOptions } from '../server';
import { buildServerOn, type ServerOn } from './server-on';

/** An API serving the queue dashboard; `close` stops it, its queues and its Redis client. */
export type DashboardServer = ServerOn;

/** Builds an API serving the queue dashboard (its replica's queues) behind `adminToken`, with `options` added. */
export function buildDashboardServer(
  database: TestDatabase,
  adminToken: string,
  options: ServerOptions = {},
): Promise<DashboardServer> {
  return buildServerOn(database.db, 'dashboard', (replica) => ({
    ...options,
    queueDashboard: { queues: replica.queues, adminToken },
  }));
}
