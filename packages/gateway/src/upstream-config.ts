/**
 * Where the drop-in endpoints send their upstream calls, and how long they wait. The API's env
 * fills it (`UPSTREAM_OPENAI_BASE_URL`, …); packages never read process.env.
 */

/** One provider endpoint: its base URL (ending in `/v1` for OpenAI) and the key Compactor uses. */
export interface UpstreamEndpoint {
  baseURL: string;
  apiKey: string;
}

/** The upstreams one tenant's requests go to, instead of the default ones, per protocol. */
export interface TenantUpstreams {
  openai?: UpstreamEndpoint;
  anthropic?: UpstreamEndpoint;
}

export type UpstreamProtocol = keyof TenantUpstreams;

export interface DropInSettings {
  /** The default OpenAI-compatible upstream, or null when none is configured. */
  openai: UpstreamEndpoint | null;
  /** The default Anthropic upstream, or null when none is configured. */
  anthropic: UpstreamEndpoint | null;
  /**
   * Tenant id → its own upstreams. A protocol the tenant's entry does not name, like a tenant
   * without an entry, goes to the default.
   */
  tenantUpstreams: ReadonlyMap<string, TenantUpstreams>;
  /**
   * A client may send its own provider key in `X-Upstream-Api-Key` (used instead of the
   * configured key, never stored or logged).
   */
  passClientKey: boolean;
  /** The longest wait for a running compaction before the served context is read anyway. */
  compactionWaitMs: number;
  /** One upstream attempt's timeout; the SDK retries a timed-out attempt (see `maxRetries`). */
  upstreamTimeoutMs: number;
  /** The SDK's own retries of 408/409/429/5xx answers and dropped connections. */
  upstreamMaxRetries: number;
  /**
   * The longest silence of an answer's body once its headers came (the SDK's timeout ends there):
   * past it the upstream call is aborted and the client told (504, or an error event in a stream).
   * 0: unbounded.
   */
  upstreamIdleMs: number;
}

/** @defaultValue 10 s: the plan's bounded wait for a compaction in progress. */
export const DEFAULT_COMPACTION_WAIT_MS = 10_000;
/** @defaultValue 10 minutes: a long completion at a slow provider still finishes. */
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 600_000;
/** @defaultValue 60 s: a provider thinking between chunks sends keep-alives well within it. */
export const DEFAULT_UPSTREAM_IDLE_MS = 60_000;
/** @defaultValue 2, as the issue asks. */
export const DEFAULT_UPSTREAM_MAX_RETRIES = 2;

/** The header in which a client may bring its own provider key (when `passClientKey`). */
export const UPSTREAM_KEY_HEADER = 'x-upstream-api-key';

/**
 * The endpoint a tenant's request is sent to: the tenant's own for the protocol, else the
 * default, with the client's own key in place of Compactor's when the settings allow it and the
 * client sent one; null when there is none.
 */
export function endpointFor(
  settings: Pick<DropInSettings, UpstreamProtocol | 'tenantUpstreams' | 'passClientKey'>,
  tenantId: string,
  protocol: UpstreamProtocol,
  clientKey: string | undefined,
): UpstreamEndpoint | null {
  const configured = settings.tenantUpstreams.get(tenantId)?.[protocol] ?? settings[protocol];
  if (configured === null) return null;
  if (settings.passClientKey && clientKey !== undefined && clientKey !== '')
    return { ...configured, apiKey: clientKey };
  return configured;
}
