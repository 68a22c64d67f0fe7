/**
 * What bench/tenant-flood.bench.ts reads beside B's latencies: the
 * machine's busy cores, and from Postgres the checkpoints completed and the API's connections
 * opened during a block.
 */
import { readFileSync } from 'node:fs';
import type pg from 'pg';

/** The machine's CPU time so far, busy and in all, in seconds over every core (/proc/stat). */
export function machineCpu(): { busy: number; total: number } {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks.map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy: busy / 100, total: (busy + idle! + iowait!) / 100 };
}

/**
 * Checkpoints the server has completed so far (`pg_stat_checkpointer` from Postgres 17 on): on a
 * shared server another database's CREATE or DROP forces one (as does the WAL reaching
 * `max_wal_size`), and the full-page writes after it slow every commit, B's included, in
 * whichever block it falls.
 */
export async function checkpointsSoFar(server: pg.Client): Promise<number> {
  const version = await server.query<{ n: string }>(`select current_setting('server_version_num') as n`);
  const { rows } = await server.query<{ n: string }>(
    Number(version.rows[0]!.n) >= 170000
      ? 'select num_timed + num_requested as n from pg_stat_checkpointer'
      : 'select checkpoints_timed + checkpoints_req as n from pg_stat_bgwriter',
  );
  return Number(rows[0]!.n);
}

/**
 * The server's clock, and how many of the API's connections to this database opened since a
 * reading of it: the pool opens one when a checkout finds none idle, and the request that waits
 * for it pays the open and its first statements on a new backend, several times a warm append.
 */
export async function serverNow(server: pg.Client): Promise<string> {
  return (await server.query<{ now: string }>('select clock_timestamp()::text as now')).rows[0]!.now;
}
export async function apiConnectionsSince(server: pg.Client, since: string): Promise<number> {
  const { rows } = await server.query<{ n: string }>(
    `select count(*) as n from pg_stat_activity
      where datname = current_database() and application_name = 'compactor-api' and backend_start >= $1`,
    [since],
  );
  return Number(rows[0]!.n);
}
