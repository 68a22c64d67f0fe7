/** The probes: `/healthz` (the process is up) and `/readyz` (Postgres and Redis answer). */
import { z } from 'zod';

/** `GET /healthz` → 200. */
export const HealthOut = z.object({ status: z.literal('ok') }).meta({ examples: [{ status: 'ok' }] });

/** `GET /readyz`: each dependency's state in plain words (`ok`, `unreachable`, `not answering`). */
export const ReadinessOut = z
  .object({ status: z.enum(['ok', 'unavailable']), checks: z.record(z.string(), z.string()) })
  .meta({ examples: [{ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } }] });
/** A readiness answer as a client receives it. */
export type Readiness = z.output<typeof ReadinessOut>;
