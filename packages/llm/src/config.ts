import { z } from 'zod';
import type { LlmConfig } from './llm';
import type { ModelPrice } from './pricing';
import { DEFAULT_PRICES } from './pricing';

const booleanString = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

const priceTableJson = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'LLM_PRICES_JSON is not valid JSON' });
      return z.NEVER;
    }
  })
  .pipe(
    z.record(
      z.string(),
      z.strictObject({
        input: z.number().nonnegative(),
        output: z.number().nonnegative(),
        cachedInput: z.number().nonnegative().optional(),
      }),
    ),
  );

/**
 * The LLM settings an app reads from its environment. Packages never read `process.env`: an app
 * composes this schema into its own `env.ts` (`appEnvSchema.extend(llmEnvSchema.shape)`, or
 * parses it separately) and hands the result to {@link llmConfigFromEnv}.
 */
export const llmEnvSchema = z
  .object({
    /** Required for OpenAI; local servers (vLLM, Ollama) accept any value. */
    OPENAI_API_KEY: z.string().min(1).optional(),
    /** Any OpenAI-compatible endpoint, e.g. `http://localhost:11434/v1`; unset = OpenAI. */
    OPENAI_BASE_URL: z.url().optional(),
    /** Deployment-wide summarizer model when a session's policy names none (else the session's model). */
    LLM_SUMMARIZER_MODEL: z.string().min(1).optional(),
    /** Model for topic-boundary detection; unset = the summarizer model. */
    LLM_TOPIC_MODEL: z.string().min(1).optional(),
    /** Default per-request timeout; the policy's `summarizer.timeoutMs` overrides it per call. */
    LLM_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
    LLM_STREAM: booleanString.default(false),
    LLM_MAX_TOKENS_PARAM: z.enum(['max_completion_tokens', 'max_tokens']).default('max_completion_tokens'),
    /** Extra attempts after an invalid summary (empty, echo, tool call) before giving up. */
    LLM_INVALID_OUTPUT_RETRIES: z.coerce.number().int().min(0).max(5).default(1),
    /** JSON `{ "model": { "input": 0.15, "output": 0.6, "cachedInput": 0.075 } }`, USD per 1M tokens, merged over the defaults. */
    LLM_PRICES_JSON: priceTableJson.optional(),
  })
  .refine((env) => env.OPENAI_API_KEY !== undefined || env.OPENAI_BASE_URL !== undefined, {
    message: 'OPENAI_API_KEY is required unless OPENAI_BASE_URL points at a server that needs none',
    path: ['OPENAI_API_KEY'],
  });

/** The parsed LLM environment; turn it into client settings with {@link llmConfigFromEnv}. */
export type LlmEnv = z.infer<typeof llmEnvSchema>;

/** Deployment-wide model choices (`LLM_SUMMARIZER_MODEL`, `LLM_TOPIC_MODEL`); `null` when unset. */
export interface LlmDeploymentDefaults {
  summarizerModel: string | null;
  topicModel: string | null;
}

/** The client configuration and the deployment's model defaults from a parsed {@link LlmEnv}. */
export function llmConfigFromEnv(env: LlmEnv): { config: LlmConfig; defaults: LlmDeploymentDefaults } {
  const prices: Record<string, ModelPrice> = { ...DEFAULT_PRICES, ...(env.LLM_PRICES_JSON ?? {}) };
  return {
    config: {
      // Local servers ignore the key, but the SDK refuses to start without one.
      apiKey: env.OPENAI_API_KEY ?? 'no-key',
      baseURL: env.OPENAI_BASE_URL ?? null,
      timeoutMs: env.LLM_TIMEOUT_MS,
      stream: env.LLM_STREAM,
      maxTokensParameter: env.LLM_MAX_TOKENS_PARAM,
      invalidOutputRetries: env.LLM_INVALID_OUTPUT_RETRIES,
      prices,
    },
    defaults: {
      summarizerModel: env.LLM_SUMMARIZER_MODEL ?? null,
      topicModel: env.LLM_TOPIC_MODEL ?? env.LLM_SUMMARIZER_MODEL ?? null,
    },
  };
}
