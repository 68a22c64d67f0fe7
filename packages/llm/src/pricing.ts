import { knownModelPrices } from '@compactor/core';
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
 * List prices (USD / 1M tokens) of the models the catalog knows (core `knownModelPrices`: the
 * session models' prices, so a summarizer and a session on the same model cost the same), a
 * cached prompt token at the cache-read price. They are estimates for dashboards and analysts,
 * not invoices: deployments override or extend the table through the client configuration
 * (`prices`), and a model the table does not know gets no cost rather than a guessed one.
 */
export const DEFAULT_PRICES: PriceTable = Object.fromEntries(
  knownModelPrices().map(({ id, pricing }) => [
    id,
    { input: pricing.input, cachedInput: pricing.cacheRead, output: pricing.output },
  ]),
);

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
