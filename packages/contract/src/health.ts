/** The probes: `/healthz` (the process is up) and `/readyz` (Postgres answers; Redis is reported). */
import { z } from 'zod';

/** `GET /healthz` → 200. */
export const HealthOut = z.object({ status: z.literal('ok') }).meta({ examples: [{ status: 'ok' }] });

/**
 * `GET /readyz`: each dependency's state in plain words (`ok`, `unreachable`, `not answering`);
 * `status` is `ok` (200) when Postgres answers, whatever Redis says.
 */
export const ReadinessOut = z
  .object({ status: z.enum(['ok', 'unavailable']), checks: z.record(z.string(), z.string()) })
  .meta({ examples: [{ status: 'ok', checks: { postgres: 'ok', redis: 'ok' } }] });
/** A readiness answer as a client receives it. */
export type Readiness = z.output<typeof ReadinessOut>;
