import { z } from 'zod';

/**
 * Fault injection. Every setting can come from the server's configuration (options, env, or the
 * `/_stub/faults` admin endpoint) or from one request's `x-stub-*` headers; a header wins over
 * the configuration for that request only.
 */

export const STUB_OUTPUT_FAULTS = [
  'malformed',
  'empty',
  'echo',
  'tool-call',
  'forge-framing',
  'drop-everything',
] as const;
export type StubOutputFault = (typeof STUB_OUTPUT_FAULTS)[number];

/**
 * `before-response`: the socket is destroyed before a byte is written; `mid-body`: after part of
 * it; `stall-mid-body`: part of it is written, then nothing more while the client stays (the
 * provider that hangs after its headers, which only a client's idle bound ends).
 */
export const STUB_DROP_FAULTS = ['before-response', 'mid-body', 'stall-mid-body'] as const;
export type StubDropFault = (typeof STUB_DROP_FAULTS)[number];

export interface StubFaults {
  /** Wait this long before answering (aborted early if the client goes away). */
  latencyMs: number;
  /** Answer with this HTTP status and an OpenAI-style error body instead of a completion. */
  status: number | null;
  /** Sent as `retry-after` (seconds, may be fractional) with a `status` answer. */
  retryAfterSeconds: number | null;
  /** `none` sends the `status` with an empty body (the "400/413 (no body)" overflow shape). */
  errorBody: 'openai' | 'none';
  /**
   * Replace the derived output: broken JSON/SSE, empty text, echoed instructions, a tool call; or
   * alter it: `forge-framing` appends lines that try to break the next prompt's framing;
   * `drop-everything` answers summary requests with a plausible summary that keeps no fact.
   */
  output: StubOutputFault | null;
  /** Drop the connection. */
  drop: StubDropFault | null;
  /** Prompt tokens + requested output tokens above this → 400 `context_length_exceeded`. */
  contextWindow: number | null;
  /** Hold each request until this many are held at once, then release them all. */
  barrier: number | null;
  /** Agent mode: tool calls in a row (after a user's text) before the text answer. */
  agentSteps: number;
}

/**
 * Server-level fault configuration. `times` limits the configured faults (not the context window
 * nor the agent steps, which are properties of the model) to the first N model requests after
 * they were set, so a test or a benchmark can say "fail twice, then succeed".
 */
export interface StubFaultConfig extends StubFaults {
  times: number | null;
}

export const NO_FAULTS: StubFaultConfig = {
  latencyMs: 0,
  status: null,
  retryAfterSeconds: null,
  errorBody: 'openai',
  output: null,
  drop: null,
  contextWindow: null,
  barrier: null,
  agentSteps: 1,
  times: null,
};

const nonNegative = z.coerce.number().nonnegative();
const positiveInt = z.coerce.number().int().positive();

/** One schema for env values, admin JSON and headers: all arrive as strings or numbers. */
export const stubFaultConfigSchema = z
  .object({
    latencyMs: nonNegative,
    status: z.coerce.number().int().min(100).max(599).nullable(),
    retryAfterSeconds: nonNegative.nullable(),
    errorBody: z.enum(['openai', 'none']),
    output: z.enum(STUB_OUTPUT_FAULTS).nullable(),
    drop: z.enum(STUB_DROP_FAULTS).nullable(),
    contextWindow: positiveInt.nullable(),
    barrier: positiveInt.nullable(),
    agentSteps: positiveInt,
    times: z.coerce.number().int().nonnegative().nullable(),
  })
  .partial();

export type StubFaultConfigInput = z.input<typeof stubFaultConfigSchema>;

/** Request header for each per-request fault setting. */
export const FAULT_HEADERS = {
  latencyMs: 'x-stub-latency-ms',
  status: 'x-stub-status',
  retryAfterSeconds: 'x-stub-retry-after',
  errorBody: 'x-stub-error-body',
  output: 'x-stub-output',
  drop: 'x-stub-drop',
  contextWindow: 'x-stub-context-window',
  barrier: 'x-stub-barrier',
  agentSteps: 'x-stub-agent-steps',
} as const satisfies Record<keyof StubFaults, string>;

export function parseFaultConfig(input: unknown): StubFaultConfig {
  return { ...NO_FAULTS, ...stripUndefined(stubFaultConfigSchema.parse(input)) };
}

/**
 * The per-request part of the schema, built once: zod compiles a schema's parser on its first
 * use, and building it per request made that compilation most of the stub's CPU per call.
 */
const headerFaultsSchema = stubFaultConfigSchema.omit({ times: true });

/** Reads the `x-stub-*` headers of one request. Throws a ZodError on an invalid value. */
export function faultsFromHeaders(
  headers: Record<string, string | string[] | undefined>,
): Partial<StubFaults> {
  const raw: Record<string, string> = {};
  for (const [key, header] of Object.entries(FAULT_HEADERS)) {
    const value = headers[header];
    const text = Array.isArray(value) ? value[0] : value;
    if (text !== undefined && text !== '') raw[key] = text;
  }
  const parsed = headerFaultsSchema.parse(raw);
  return stripUndefined(parsed);
}

/**
 * The faults one request sees: the configuration's (unless its `times` budget is spent), then the
 * request's own headers on top. The context window and the agent steps, properties of the model
 * rather than faults, always apply.
 */
export function effectiveFaults(
  config: StubFaultConfig,
  configuredFaultsApply: boolean,
  fromHeaders: Partial<StubFaults>,
): StubFaults {
  const { times: _configTimes, ...configured } = config;
  const { times: _noTimes, ...none } = NO_FAULTS;
  const base: StubFaults = configuredFaultsApply
    ? configured
    : { ...none, contextWindow: config.contextWindow, agentSteps: config.agentSteps };
  return { ...base, ...fromHeaders };
}

function stripUndefined<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}
