import { z } from 'zod';
import type { StubFaultConfigInput } from '@compactor/llm-stub';
import { stubFaultConfigSchema } from '@compactor/llm-stub';

/**
 * The stub's process configuration. Fault settings here apply to every chat request (see the
 * README); requests can still override them with `x-stub-*` headers.
 */
const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4010),
  HOST: z.string().min(1).default('127.0.0.1'),
  /** When set, requests must carry `Authorization: Bearer <key>` or `x-api-key: <key>`. */
  LLM_STUB_API_KEY: z.string().min(1).optional(),
  /** Comma-separated ids listed by `GET /v1/models`. */
  LLM_STUB_MODELS: z.string().min(1).optional(),
  LLM_STUB_STREAM_PIECE_CHARS: z.coerce.number().int().nonnegative().optional(),
  LLM_STUB_LATENCY_MS: z.string().optional(),
  LLM_STUB_STATUS: z.string().optional(),
  LLM_STUB_RETRY_AFTER: z.string().optional(),
  LLM_STUB_ERROR_BODY: z.string().optional(),
  LLM_STUB_OUTPUT: z.string().optional(),
  LLM_STUB_DROP: z.string().optional(),
  LLM_STUB_CONTEXT_WINDOW: z.string().optional(),
  LLM_STUB_BARRIER: z.string().optional(),
  /** Agent mode: tool calls in a row before the text answer (default 1). */
  LLM_STUB_AGENT_STEPS: z.string().optional(),
  LLM_STUB_FAULT_TIMES: z.string().optional(),
});

export interface StubEnv {
  port: number;
  host: string;
  apiKey: string | null;
  models: string[] | undefined;
  streamPieceChars: number | undefined;
  faults: StubFaultConfigInput;
}

export function parseEnv(env: Record<string, string | undefined>): StubEnv {
  const raw = envSchema.parse(env);
  const faults = stubFaultConfigSchema.parse(
    Object.fromEntries(
      Object.entries({
        latencyMs: raw.LLM_STUB_LATENCY_MS,
        status: raw.LLM_STUB_STATUS,
        retryAfterSeconds: raw.LLM_STUB_RETRY_AFTER,
        errorBody: raw.LLM_STUB_ERROR_BODY,
        output: raw.LLM_STUB_OUTPUT,
        drop: raw.LLM_STUB_DROP,
        contextWindow: raw.LLM_STUB_CONTEXT_WINDOW,
        barrier: raw.LLM_STUB_BARRIER,
        agentSteps: raw.LLM_STUB_AGENT_STEPS,
        times: raw.LLM_STUB_FAULT_TIMES,
      }).filter(([, value]) => value !== undefined && value !== ''),
    ),
  );
  return {
    port: raw.PORT,
    host: raw.HOST,
    apiKey: raw.LLM_STUB_API_KEY ?? null,
    models: raw.LLM_STUB_MODELS?.split(',')
      .map((id) => id.trim())
      .filter((id) => id !== ''),
    streamPieceChars: raw.LLM_STUB_STREAM_PIECE_CHARS,
    faults,
  };
}
