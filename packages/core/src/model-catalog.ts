import type { CacheBehaviour, ModelInfo, ModelPricing } from './model';
import { TRIGGER_DEFAULTS } from './policy';

/** Opal's fallback, and the API contract's: a model nobody knows gets a 128k window. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

interface KnownModel {
  /**
   * Matched against the model id: exact, or as a prefix followed by `-`, `:`, `@` or `/`. Not
   * `.`: it is part of version numbers, and `gpt-4.5` is not a `gpt-4`.
   */
  id: string;
  contextWindow: number;
  maxOutputTokens: number;
  inputLimit?: number;
  /** List prices (USD / 1M tokens) as the provider publishes them; absent when not known. */
  pricing?: ModelPricing;
  cache?: CacheBehaviour;
}

/** Anthropic: the client marks cache breakpoints; a 5-minute write costs 1.25× input, a read 0.1×. */
function anthropic(input: number, output: number, cacheRead: number, cacheWrite: number) {
  return {
    pricing: { input, output, cacheRead, cacheWrite },
    cache: { kind: 'explicit', ttlSeconds: 300 },
  } as const;
}

/** OpenAI, Gemini, DeepSeek: prefixes are cached on their own; writing costs the input price. */
function automatic(input: number, cacheRead: number, output: number) {
  return {
    pricing: { input, output, cacheRead, cacheWrite: input },
    cache: { kind: 'automatic', ttlSeconds: 300 },
  } as const;
}

/**
 * Limits of widely used models, as their providers publish them. Longest matching id wins, so a
 * dated snapshot (`gpt-4o-2024-08-06`) or a routed name (`anthropic/claude-sonnet-4`) resolves to
 * its family. Clients can always send exact limits instead.
 */
const KNOWN_MODELS: KnownModel[] = [
  { id: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 16_384, ...automatic(2.5, 1.25, 10) },
  { id: 'gpt-4o-mini', contextWindow: 128_000, maxOutputTokens: 16_384, ...automatic(0.15, 0.075, 0.6) },
  { id: 'gpt-4.1', contextWindow: 1_047_576, maxOutputTokens: 32_768, ...automatic(2, 0.5, 8) },
  { id: 'gpt-4.1-mini', contextWindow: 1_047_576, maxOutputTokens: 32_768, ...automatic(0.4, 0.1, 1.6) },
  { id: 'gpt-4.1-nano', contextWindow: 1_047_576, maxOutputTokens: 32_768, ...automatic(0.1, 0.025, 0.4) },
  { id: 'gpt-4.5', contextWindow: 128_000, maxOutputTokens: 16_384 },
  { id: 'gpt-4-turbo', contextWindow: 128_000, maxOutputTokens: 4_096 },
  { id: 'gpt-4-32k', contextWindow: 32_768, maxOutputTokens: 8_192 },
  { id: 'gpt-4', contextWindow: 8_192, maxOutputTokens: 8_192 },
  { id: 'gpt-3.5-turbo', contextWindow: 16_385, maxOutputTokens: 4_096 },
  {
    id: 'gpt-5',
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    inputLimit: 272_000,
    ...automatic(1.25, 0.125, 10),
  },
  {
    id: 'gpt-5-mini',
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    inputLimit: 272_000,
    ...automatic(0.25, 0.025, 2),
  },
  {
    id: 'gpt-5-nano',
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    inputLimit: 272_000,
    ...automatic(0.05, 0.005, 0.4),
  },
  { id: 'o1', contextWindow: 200_000, maxOutputTokens: 100_000 },
  { id: 'o3', contextWindow: 200_000, maxOutputTokens: 100_000, ...automatic(2, 0.5, 8) },
  { id: 'o3-mini', contextWindow: 200_000, maxOutputTokens: 100_000, ...automatic(1.1, 0.55, 4.4) },
  { id: 'o4-mini', contextWindow: 200_000, maxOutputTokens: 100_000, ...automatic(1.1, 0.275, 4.4) },
  { id: 'claude-3-5-sonnet', contextWindow: 200_000, maxOutputTokens: 8_192, ...anthropic(3, 15, 0.3, 3.75) },
  { id: 'claude-3-5-haiku', contextWindow: 200_000, maxOutputTokens: 8_192, ...anthropic(0.8, 4, 0.08, 1) },
  {
    id: 'claude-3-7-sonnet',
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    ...anthropic(3, 15, 0.3, 3.75),
  },
  { id: 'claude-sonnet-4', contextWindow: 200_000, maxOutputTokens: 64_000, ...anthropic(3, 15, 0.3, 3.75) },
  {
    id: 'claude-sonnet-4-5',
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    ...anthropic(3, 15, 0.3, 3.75),
  },
  { id: 'claude-opus-4', contextWindow: 200_000, maxOutputTokens: 32_000, ...anthropic(15, 75, 1.5, 18.75) },
  {
    id: 'claude-opus-4-1',
    contextWindow: 200_000,
    maxOutputTokens: 32_000,
    ...anthropic(15, 75, 1.5, 18.75),
  },
  { id: 'claude-haiku-4-5', contextWindow: 200_000, maxOutputTokens: 64_000, ...anthropic(1, 5, 0.1, 1.25) },
  // OpenRouter spells Claude versions with a dot (`anthropic/claude-sonnet-4.5`).
  { id: 'claude-3.5-sonnet', contextWindow: 200_000, maxOutputTokens: 8_192, ...anthropic(3, 15, 0.3, 3.75) },
  { id: 'claude-3.5-haiku', contextWindow: 200_000, maxOutputTokens: 8_192, ...anthropic(0.8, 4, 0.08, 1) },
  {
    id: 'claude-3.7-sonnet',
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    ...anthropic(3, 15, 0.3, 3.75),
  },
  {
    id: 'claude-sonnet-4.5',
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    ...anthropic(3, 15, 0.3, 3.75),
  },
  {
    id: 'claude-opus-4.1',
    contextWindow: 200_000,
    maxOutputTokens: 32_000,
    ...anthropic(15, 75, 1.5, 18.75),
  },
  { id: 'claude-haiku-4.5', contextWindow: 200_000, maxOutputTokens: 64_000, ...anthropic(1, 5, 0.1, 1.25) },
  { id: 'gemini-2.5-pro', contextWindow: 1_048_576, maxOutputTokens: 65_536, ...automatic(1.25, 0.31, 10) },
  {
    id: 'gemini-2.5-flash',
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    ...automatic(0.3, 0.075, 2.5),
  },
  { id: 'gemini-2.0-flash', contextWindow: 1_048_576, maxOutputTokens: 8_192 },
  { id: 'deepseek-chat', contextWindow: 128_000, maxOutputTokens: 8_192, ...automatic(0.27, 0.07, 1.1) },
  { id: 'deepseek-reasoner', contextWindow: 128_000, maxOutputTokens: 64_000 },
  { id: 'mistral-large', contextWindow: 128_000, maxOutputTokens: 8_192 },
  { id: 'llama-3.1', contextWindow: 128_000, maxOutputTokens: 4_096 },
  { id: 'llama-3.3', contextWindow: 128_000, maxOutputTokens: 4_096 },
  { id: 'qwen2.5-coder', contextWindow: 32_768, maxOutputTokens: 8_192 },
];

/** Every known model with published prices, by catalog id (the summarizer's cost table starts from it). */
export function knownModelPrices(): Array<{ id: string; pricing: ModelPricing }> {
  return KNOWN_MODELS.flatMap((model) => (model.pricing ? [{ id: model.id, pricing: model.pricing }] : []));
}

const SEPARATORS = new Set(['-', ':', '@', '/']);

/** The catalog entry for a model id (provider prefixes like `openai/` are ignored), or null. */
export function lookupKnownModel(modelId: string): KnownModel | null {
  const id = modelId.toLowerCase().replace(/^.*\//, '');
  let best: KnownModel | null = null;
  for (const model of KNOWN_MODELS) {
    const matches = id === model.id || (id.startsWith(model.id) && SEPARATORS.has(id[model.id.length] ?? ''));
    if (matches && (!best || model.id.length > best.id.length)) best = model;
  }
  return best;
}

/**
 * Completes what a client said about its model: explicit values win, then `inherited` (the
 * stored model's, when a patch keeps the model id), then the catalog, then the defaults (128k
 * window; OpenCode's 32k output ceiling, the policy's `outputReserveCap`). Limits the client did
 * not state are fitted to the window: an output limit is bounded by it, an input limit that does
 * not fit it is dropped. So a client that declares a window smaller than its model's (a proxy's
 * limit, a local server's context) keeps a consistent model.
 * Stated limits are returned as stated; the contract's `modelLimitsIssues` judges them.
 */
export function resolveModelInfo(
  input: {
    id: string;
    provider?: string | null | undefined;
    contextWindow?: number | null | undefined;
    maxOutputTokens?: number | null | undefined;
    inputLimit?: number | null | undefined;
  },
  inherited: Partial<Pick<ModelInfo, 'contextWindow' | 'maxOutputTokens' | 'inputLimit'>> = {},
): ModelInfo {
  const known = lookupKnownModel(input.id);
  const contextWindow =
    input.contextWindow ?? inherited.contextWindow ?? known?.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
  const withinWindow = (limit: number) => (contextWindow > 0 ? Math.min(limit, contextWindow) : limit);
  const unstatedInputLimit =
    inherited.inputLimit !== undefined ? inherited.inputLimit : (known?.inputLimit ?? null);
  return {
    id: input.id,
    provider: input.provider ?? 'unknown',
    contextWindow,
    maxOutputTokens:
      input.maxOutputTokens ??
      withinWindow(
        inherited.maxOutputTokens ?? known?.maxOutputTokens ?? TRIGGER_DEFAULTS.overflow.outputReserveCap,
      ),
    // An input limit that does not fit the window limits nothing: the window minus the output
    // reserve does (an input limit as large as the window would leave no room for the answer).
    inputLimit:
      input.inputLimit !== undefined
        ? input.inputLimit
        : unstatedInputLimit !== null && contextWindow > 0 && unstatedInputLimit >= contextWindow
          ? null
          : unstatedInputLimit,
  };
}
