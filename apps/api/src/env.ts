import { logLevelSchema, sharedEnvFields } from '@compactor/queue';
import { z } from 'zod';
import type { TenantLimitSettings } from '@compactor/sessions';
import type { DropInSettings } from '@compactor/gateway';
import { loadTenantUpstreams } from './dropin-tenant-upstreams';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(0).max(65_535);

/** A URL, or unset (an empty value is unset, as compose files write it). */
const optionalUrl = z.preprocess(
  (v) => (v === '' ? undefined : v),
  z.url({ protocol: /^https?$/ }).optional(),
);

/** An IPv4 or IPv6 address, or a CIDR range of either (what Fastify's `trustProxy` list takes). */
const PROXY_ADDRESS = /^(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*)(?:\/[0-9]{1,3})?$/;

const EnvFields = z.object({
  // A statement past 15 s (or no connection within 5 s) is answered 503 with Retry-After.
  ...sharedEnvFields({ poolMin: 1, poolDefault: 10, statementTimeoutMs: 15_000 }),
  /** `production` (the image sets it) refuses to start without keys: see {@link openStartRefusal}. */
  NODE_ENV: z.string().default('development'),
  PORT: port.default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Serve `/metrics` on this port instead (a second listener on HOST), and not on PORT, so the
   * public listener never shows it. Unset or empty: `/metrics` is on PORT.
   */
  METRICS_PORT: z.preprocess((v) => (v === '' ? undefined : v), port.optional()),
  /**
   * `tenant:key,tenant:key`. Empty, with no key in the keys table either, runs the API open: in
   * production only with ALLOW_UNAUTHENTICATED=true.
   */
  API_KEYS: z.string().default(''),
  /** Lets a production API start with no key anywhere (open, every request tenant `default`). */
  ALLOW_UNAUTHENTICATED: booleanFlag.default(false),
  /**
   * Which peers' `X-Forwarded-For` names the client (the dashboard's wrong-token lockout is per
   * client address; behind a reverse proxy every caller has the proxy's): unset or `false` trusts
   * none; comma-separated addresses and CIDR ranges of the proxies (`10.0.0.0/8,127.0.0.1`) trust
   * those, and the client is the nearest address in the header that is not one of them. `true`
   * trusts every peer: only when nothing but the proxy can reach the API, or any caller can name
   * itself.
   */
  TRUST_PROXY: z
    .string()
    .trim()
    .optional()
    .transform((value, ctx): boolean | string => {
      if (value === undefined || value === '' || value === 'false') return false;
      if (value === 'true') return true;
      const entries = value.split(',').map((entry) => entry.trim());
      if (entries.some((entry) => !PROXY_ADDRESS.test(entry)))
        ctx.addIssue({
          code: 'custom',
          message: 'TRUST_PROXY: true, false, or comma-separated addresses / CIDR ranges of the proxies',
        });
      return entries.join(',');
    }),
  /** Operator token for the queue dashboard (/admin/queues); the dashboard is off without one. */
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional(),
  /** Apply migrations at start (default), or refuse to start on an unmigrated database. */
  MIGRATE_ON_START: booleanFlag.default(true),
  /**
   * The level of the one line logged per request: at `debug` with `LOG_LEVEL=info` no request is
   * logged (the local stack of the demo and the replay, where each line costs the API and the
   * parent that reads it about a tenth of an append). Failed requests are logged at `error`.
   */
  REQUEST_LOG_LEVEL: logLevelSchema.exclude(['silent']).default('info'),
  /** Largest request body; tool outputs can be large. */
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024),
  /**
   * Requests of one tenant doing their work at once in this process; the others wait their turn,
   * so another tenant's request never queues behind a flood. Event streams, drop-in requests
   * and large appends take none. 0: every request runs at once.
   */
  TENANT_REQUESTS_IN_FLIGHT: z.coerce.number().int().min(0).max(100_000).default(2),
  /** Requests of one tenant waiting for their turn in this process before a 429. */
  TENANT_REQUESTS_QUEUED: z.coerce.number().int().min(0).max(100_000).default(128),
  /**
   * How long a flooding tenant's next request waits for a younger request of a tenant that has had
   * less of the process's time lately (the API's `TenantGate`); 0: tenants never wait for each other.
   */
  TENANT_YIELD_MS: z.coerce.number().int().min(0).max(60_000).default(200),
  /**
   * The OpenAI-compatible provider `POST /v1/chat/completions` calls with the served context
   * (its base URL, ending in `/v1`). Unset: that route answers 503.
   */
  UPSTREAM_OPENAI_BASE_URL: optionalUrl,
  /** Compactor's key at that provider (a local server may need none). */
  UPSTREAM_OPENAI_API_KEY: z.string().default(''),
  /** The Anthropic provider `POST /v1/messages` calls (`https://api.anthropic.com`). */
  UPSTREAM_ANTHROPIC_BASE_URL: optionalUrl,
  /** Compactor's key at Anthropic. */
  UPSTREAM_ANTHROPIC_API_KEY: z.string().default(''),
  /**
   * Lets a drop-in client send its own provider key in `X-Upstream-Api-Key`, used for its
   * request instead of Compactor's (never stored or logged).
   */
  DROPIN_PASS_CLIENT_KEY: booleanFlag.default(false),
  /**
   * A JSON file of tenant id → `{ openai?, anthropic? }`, each `{ baseURL, apiKey | apiKeyEnv }`:
   * those tenants' drop-in requests go there instead of the UPSTREAM_* defaults (a protocol an
   * entry leaves out goes to the default). Read and checked at start. Unset: every tenant uses
   * the defaults.
   */
  DROPIN_TENANT_UPSTREAMS_FILE: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  /**
   * The longest a drop-in request waits for a running compaction (a context over the window, or
   * the emergency compaction after an upstream overflow) before it is served anyway.
   */
  DROPIN_COMPACTION_WAIT_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  /**
   * The longest an upstream answer may stay silent once its headers came (the providers' SDK
   * timeouts end at the headers): past it the call is aborted and the client gets a 504, or an
   * error event in its stream; nothing of the answer is stored. 0: unbounded.
   */
  DROPIN_UPSTREAM_IDLE_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  /** Writes to one session that wait in this process (without a connection) before a 429. */
  SESSION_WRITE_QUEUE_LIMIT: z.coerce.number().int().min(0).max(100_000).default(32),
  /**
   * Event streams one tenant may hold open in this process (each holds a socket, which the
   * process has a finite number of); the next is a 429. Per process. 0: no limit.
   */
  TENANT_MAX_EVENT_STREAMS: z.coerce.number().int().min(0).max(1_000_000).default(100),
  /**
   * Compactions one tenant may have pending or running, over every replica (counted in
   * Postgres): each costs LLM calls. Manual and overflow requests past it are 429s; an auto
   * compaction past it waits its turn (recorded in Postgres; a worker starts it when one of the
   * tenant's compactions ends). 0: no limit.
   */
  TENANT_MAX_ACTIVE_COMPACTIONS: z.coerce.number().int().min(0).max(1_000_000).default(20),
  /**
   * Sessions one tenant may create per minute in this process (a token bucket holding a minute's
   * worth); the next is a 429. Per process: N replicas allow N times as many. 0: no limit.
   */
  TENANT_SESSION_CREATE_RATE: z.coerce.number().int().min(0).max(1_000_000).default(600),
});

/** The shortest ADMIN_TOKEN a production API accepts (`openssl rand -hex 16` writes 32). */
export const PRODUCTION_ADMIN_TOKEN_MIN_LENGTH = 32;

/** Words a placeholder left in a secret carries (`change-me-to-16-or-more-characters`). */
const PLACEHOLDER_TOKEN = /change[-_ .]?me|replace[-_ .]?me|placeholder|example|your[-_ .]?token|x{8}/i;

/**
 * Why a production API must not take this ADMIN_TOKEN, or null: the dashboard it opens can
 * retry, remove and read every job, so a placeholder copied from a manifest, or a short token,
 * must not open it.
 */
export function weakAdminTokenReason(token: string): string | null {
  if (PLACEHOLDER_TOKEN.test(token))
    return 'ADMIN_TOKEN is a placeholder (it reads like "change-me"): set a random one, e.g. `openssl rand -hex 16`';
  if (token.length < PRODUCTION_ADMIN_TOKEN_MIN_LENGTH)
    return `ADMIN_TOKEN must be at least ${PRODUCTION_ADMIN_TOKEN_MIN_LENGTH} characters with NODE_ENV=production (it has ${token.length}): e.g. \`openssl rand -hex 16\``;
  return null;
}

/** The API's whole configuration. Only this file reads process.env. */
export const EnvSchema = EnvFields.refine(
  (env) => env.METRICS_PORT === undefined || env.METRICS_PORT === 0 || env.METRICS_PORT !== env.PORT,
  {
    message: 'METRICS_PORT must differ from PORT (unset it to serve /metrics on PORT)',
    path: ['METRICS_PORT'],
  },
).superRefine((env, ctx) => {
  if (env.NODE_ENV !== 'production' || env.ADMIN_TOKEN === undefined) return;
  const reason = weakAdminTokenReason(env.ADMIN_TOKEN);
  if (reason !== null) ctx.addIssue({ code: 'custom', message: reason, path: ['ADMIN_TOKEN'] });
});

export type Env = z.infer<typeof EnvSchema>;

export class EnvError extends Error {
  override readonly name = 'EnvError';
}

/** Parses the environment or throws one readable error naming every bad variable. */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  const result = EnvSchema.safeParse(source);
  if (!result.success) throw new EnvError(`invalid environment:\n${z.prettifyError(result.error)}`);
  return result.data;
}

/** The per-tenant caps as the server takes them (`ServerOptions.tenantLimits`). */
export function tenantLimitSettings(env: Env): TenantLimitSettings {
  return {
    maxEventStreams: env.TENANT_MAX_EVENT_STREAMS,
    maxActiveCompactions: env.TENANT_MAX_ACTIVE_COMPACTIONS,
    sessionCreatesPerMinute: env.TENANT_SESSION_CREATE_RATE,
  };
}

/**
 * The drop-in endpoints' upstreams as the server takes them (`ServerOptions.dropIn`); the
 * per-tenant file is read here, its `apiKeyEnv` names looked up in `secrets`. Throws a
 * `TenantUpstreamsError` for a file that is missing or wrong.
 */
export function dropInSettings(
  env: Env,
  secrets: Record<string, string | undefined> = process.env,
): Partial<DropInSettings> {
  const endpoint = (baseURL: string | undefined, apiKey: string) => (baseURL ? { baseURL, apiKey } : null);
  return {
    openai: endpoint(env.UPSTREAM_OPENAI_BASE_URL, env.UPSTREAM_OPENAI_API_KEY),
    anthropic: endpoint(env.UPSTREAM_ANTHROPIC_BASE_URL, env.UPSTREAM_ANTHROPIC_API_KEY),
    tenantUpstreams:
      env.DROPIN_TENANT_UPSTREAMS_FILE === undefined
        ? new Map()
        : loadTenantUpstreams(env.DROPIN_TENANT_UPSTREAMS_FILE, secrets),
    passClientKey: env.DROPIN_PASS_CLIENT_KEY,
    compactionWaitMs: env.DROPIN_COMPACTION_WAIT_MS,
    upstreamIdleMs: env.DROPIN_UPSTREAM_IDLE_MS,
  };
}

/**
 * Why the API must not start, or null: in production with no key anywhere (API_KEYS empty and
 * `keyTableHasKeys` false) it would serve every caller as tenant `default`, and an empty
 * API_KEYS there is more often a secret left unfilled than a choice, so running open takes
 * ALLOW_UNAUTHENTICATED=true. Elsewhere (development, tests, the demo) open is the default.
 */
export function openStartRefusal(env: Env, keyTableHasKeys: boolean): string | null {
  if (env.NODE_ENV !== 'production' || env.ALLOW_UNAUTHENTICATED) return null;
  if (keyTableHasKeys || parseApiKeys(env.API_KEYS).size > 0) return null;
  return (
    'refusing to start: NODE_ENV=production and no API key is configured (API_KEYS is empty and the ' +
    'keys table has no active key), so anyone who can reach the API could use it. Set API_KEYS ' +
    '(tenant:key,tenant:key) or create a key (npm run keys -w @compactor/api -- create <tenant>); ' +
    'or set ALLOW_UNAUTHENTICATED=true to run it open on purpose.'
  );
}

/** `tenant:key,tenant:key` → key → tenant. Throws on malformed entries rather than ignoring them. */
export function parseApiKeys(value: string): Map<string, string> {
  const keys = new Map<string, string>();
  for (const entry of value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const colon = entry.indexOf(':');
    const tenant = entry.slice(0, colon).trim();
    const key = entry.slice(colon + 1).trim();
    if (colon <= 0 || !tenant || !key)
      throw new EnvError(`API_KEYS entry must be tenant:key, got "${entry.slice(0, 40)}"`);
    keys.set(key, tenant);
  }
  return keys;
}
