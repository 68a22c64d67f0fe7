import type { LlmUsage } from './usage';

/** USD per million tokens. `cachedInput` defaults to `input` when a provider has no cache discount. */
export interface ModelPrice {
  input: number;
  output: number;
  cachedInput?: number;
}

/** Prices by model name (lower-cased on lookup, see {@link findModelPrice}), in USD per 1M tokens. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * List prices (USD / 1M tokens) of common summarizer models as published by their providers in
 * 2025. They are estimates for dashboards and analysts, not invoices: deployments override or
 * extend the table through the client configuration (`prices`), and a model the table does not
 * know gets no cost rather than a guessed one.
 */
export const DEFAULT_PRICES: PriceTable = {
  'gpt-4o': { input: 2.5, cachedInput: 1.25, output: 10 },
  'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6 },
  'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8 },
  'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, cachedInput: 0.025, output: 0.4 },
  'gpt-5': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 },
  'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4 },
  o3: { input: 2, cachedInput: 0.5, output: 8 },
  'o3-mini': { input: 1.1, cachedInput: 0.55, output: 4.4 },
  'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4 },
  'claude-opus-4': { input: 15, cachedInput: 1.5, output: 75 },
  'claude-sonnet-4': { input: 3, cachedInput: 0.3, output: 15 },
  'claude-3-7-sonnet': { input: 3, cachedInput: 0.3, output: 15 },
  'claude-3-5-sonnet': { input: 3, cachedInput: 0.3, output: 15 },
  'claude-3-5-haiku': { input: 0.8, cachedInput: 0.08, output: 4 },
  'claude-haiku-4-5': { input: 1, cachedInput: 0.1, output: 5 },
};

/**
 * The table entry for a model name as providers and proxies spell it: case-insensitive, without a
 * routing prefix (`openai/gpt-4o-mini`, `azure/…`), and with dated or tagged variants
 * (`gpt-4o-mini-2024-07-18`, `claude-3-5-haiku-latest`) falling back to the longest known base
 * name, so `gpt-4o-mini-…` never picks up `gpt-4o`'s price.
 */
export function findModelPrice(model: string, table: PriceTable = DEFAULT_PRICES): ModelPrice | null {
  const name = model.trim().toLowerCase().split('/').pop() ?? '';
  const entries = Object.entries(table).map(([key, price]) => [key.toLowerCase(), price] as const);
  const exact = entries.find(([key]) => key === name);
  if (exact) return exact[1];
  let best: { key: string; price: ModelPrice } | null = null;
  for (const [key, price] of entries) {
    const isVariant = name.startsWith(`${key}-`) || name.startsWith(`${key}:`) || name.startsWith(`${key}@`);
    if (isVariant && (best === null || key.length > best.key.length)) best = { key, price };
  }
  return best?.price ?? null;
}

/** Estimated USD cost of one call, or `null` when the table does not know the model. */
export function estimateCostUsd(
  model: string,
  usage: LlmUsage,
  table: PriceTable = DEFAULT_PRICES,
): number | null {
  const price = findModelPrice(model, table);
  if (price === null) return null;
  const cached = Math.min(usage.cachedPromptTokens, usage.promptTokens);
  const uncached = usage.promptTokens - cached;
  const dollars =
    (uncached * price.input +
      cached * (price.cachedInput ?? price.input) +
      usage.completionTokens * price.output) /
    1_000_000;
  // Rounded to a millionth of a cent: enough for sums, free of float noise in stored rows.
  return Math.round(dollars * 1e8) / 1e8;
}
