/**
 * The parts of the compaction policy's schema (policy.ts): the shared number and name types, the
 * trigger variants, and each nested section (pruning, keepRecent, topic, summarizer, fileTools,
 * prepare). Each field's `.describe()` text is what a client reads in docs/API.md's "Policy"
 * section and the OpenAPI document (the JSDoc comments add the reference systems' names).
 */
import { z } from 'zod';

const tokens = z.number().int().nonnegative();
const positiveTokens = z.number().int().positive();
/** Counts of other things (turns, messages, characters, milliseconds). */
const count = z.number().int().nonnegative();
export const positiveCount = z.number().int().positive();
/** A fraction of the context window. */
const windowRatio = z.number().gt(0).lte(1);
const toolNames = z.array(z.string().min(1));

/** OpenCode: `input + cache.read + output > usable`, usable = input limit or window − min(maxOutput, cap). */
export const OverflowTriggerSchema = z.strictObject({
  kind: z.literal('overflow'),
  /** Cap on the output reserve subtracted from the window (OpenCode's `OUTPUT_TOKEN_MAX`). */
  outputReserveCap: positiveTokens.describe(
    '`overflow`: cap on the output reserve subtracted from the window (usable = window − min(model max output, this))',
  ),
});
/** Opal: estimated context ≥ `ratio` × window. */
export const RatioTriggerSchema = z.strictObject({
  kind: z.literal('ratio'),
  ratio: windowRatio.describe('`ratio`: compact once the context reaches this share of the window'),
});
/**
 * klaude-code: context > window − reserve, reserve = min(reserveTokens, max(minReserveTokens,
 * reserveRatio × window)). "16384 or 25 %" resolves to the smaller, so small windows still have room.
 */
export const ReserveTriggerSchema = z.strictObject({
  kind: z.literal('reserve'),
  reserveTokens: positiveTokens.describe(
    '`reserve`: compact once the context passes window − reserve, reserve = min(reserveTokens, max(minReserveTokens, reserveRatio × window))',
  ),
  reserveRatio: windowRatio.describe('`reserve`: the reserve as a share of the window'),
  minReserveTokens: tokens.describe('`reserve`: the smallest reserve'),
});
/** The topic reference's: history tokens > `compaction_trigger_tokens`, whatever the window. */
export const TokensTriggerSchema = z.strictObject({
  kind: z.literal('tokens'),
  tokens: positiveTokens.describe(
    '`tokens`: compact once the history passes this many tokens, whatever the window',
  ),
});

/** When auto compaction fires: one reference system's rule per `kind` (the variant schemas above). */
export const TriggerSchema = z.discriminatedUnion('kind', [
  OverflowTriggerSchema,
  RatioTriggerSchema,
  ReserveTriggerSchema,
  TokensTriggerSchema,
]);
/** A resolved trigger; {@link TRIGGER_DEFAULTS} holds each kind's defaults. */
export type Trigger = z.infer<typeof TriggerSchema>;
/** `overflow` (OpenCode, the default), `ratio` (Opal), `reserve` (klaude-code) or `tokens` (the topic preset). */
export type TriggerKind = Trigger['kind'];

export const PruningSchema = z.strictObject({
  /** Newest completed tool-output tokens never pruned (OpenCode `PRUNE_PROTECT`). */
  protectTokens: tokens.describe(
    'The newest completed tool outputs, this many tokens of them, are never pruned',
  ),
  /** Prune only when strictly more than this would be saved (OpenCode `PRUNE_MINIMUM`). */
  minimumTokens: tokens.describe('Prune only when strictly more than this many tokens would be cleared'),
  protectedTools: toolNames.describe('Tools whose outputs are never pruned'),
  protectUserTurns: count.describe(
    'The newest user turns (a user message and what follows it) pruning never touches',
  ),
  /**
   * Whether an after-turn prune waits while the provider's prompt cache is warm and the prune
   * would not repay the cache it breaks within `cacheHorizonTurns` (docs/DESIGN.md, "Prompt
   * cache"); `null` = on when the session's model has prices and a cache.
   */
  cacheAware: z
    .boolean()
    .nullable()
    .describe(
      "Whether an after-turn prune waits while the prompt cache is warm and the prune would not repay the cache it breaks within `cacheHorizonTurns`; null: on when the session's model has prices and a cache",
    ),
  cacheHorizonTurns: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .describe("Turns over which a prune's per-turn saving must repay the cache it breaks"),
});

export const KeepRecentFieldsSchema = z.strictObject({
  /** Auto compaction keeps `autoRatio` × window (Opal: window / 4). */
  autoRatio: windowRatio.describe(
    'An automatic compaction keeps this share of the window as recent messages',
  ),
  /** Emergency (overflow) compaction keeps `emergencyRatio` × window (Opal: window / 5). */
  emergencyRatio: windowRatio.describe(
    'An emergency (overflow) compaction keeps this share of the window as recent messages',
  ),
  /** Manual compaction keeps this many tokens; `null` = the auto budget (klaude-code). */
  manualTokens: positiveTokens
    .nullable()
    .describe('A manual compaction keeps this many tokens of recent messages; null: the automatic budget'),
  /**
   * Whether the manual budget is capped at the auto budget (default: 20,000 on an 8k window would
   * keep everything); `false` keeps `manualTokens` as given (Opal's `keep_recent_tokens`).
   */
  manualCappedByAuto: z
    .boolean()
    .describe(
      'Whether the manual budget is capped at the automatic one; false keeps `manualTokens` as given',
    ),
  /** Floor of the ratio budgets (klaude-code: 4096). */
  minTokens: tokens.describe('Floor of the ratio budgets'),
  /** Ceiling of the ratio budgets, `null` = none (klaude-code: 20000). */
  maxTokens: positiveTokens.nullable().describe('Ceiling of the ratio budgets; null: none'),
  /**
   * When the walk back from the newest message has found the budget: once the accumulated tokens
   * `reached` it (≥, klaude-code's "until keep_recent_tokens is reached", the default) or
   * `exceeded` it (>, Opal's "when the accumulated total exceeds keep_recent_tokens").
   */
  cutWhen: z
    .enum(['reached', 'exceeded'])
    .describe(
      'The walk back from the newest message stops once the kept tokens have `reached` the budget (≥) or `exceeded` it (>)',
    ),
});
export const KeepRecentSchema = KeepRecentFieldsSchema.refine(
  (k) => k.maxTokens === null || k.minTokens <= k.maxTokens,
  {
    message: 'keepRecent.minTokens must not exceed keepRecent.maxTokens',
  },
);

export const TopicSchema = z.strictObject({
  /** User/assistant exchanges always kept verbatim (the topic reference's `min_verbatim_exchanges`). */
  minVerbatimExchanges: count.describe('User/assistant exchanges always kept verbatim'),
  /** A detected boundary below this confidence is ignored (the topic reference: 0.5). */
  minConfidence: z
    .number()
    .min(0)
    .max(1)
    .describe('A detected topic boundary below this confidence is ignored'),
  verbatimWindowTokens: positiveTokens.describe(
    'Recent history always kept verbatim: the keep-recent budget in topic mode',
  ),
  maxMessages: positiveCount.describe('At most this many recent messages are shown to the boundary detector'),
  maxCharsPerMessage: positiveCount.describe(
    'Each message shown to the detector is cut to this many characters',
  ),
  /**
   * A `summarize` case's summary: the detector's own `summary` (the topic reference's, no second LLM call), or
   * the normal summarizer, which merges the previous summary and writes the structured sections.
   */
  summaryFrom: z
    .enum(['detector', 'summarizer'])
    .describe(
      "The summary: the boundary detector's own (no second LLM call) or the summarizer's, which merges the previous summary",
    ),
});

export const SummarizerSchema = z.strictObject({
  /**
   * The summary request: `structured` (Opal's sections, update prompt and rules) or `opencode`
   * (OpenCode's compaction-agent directive and its "Provide a detailed prompt…" request).
   */
  prompt: z
    .enum(['structured', 'opencode'])
    .describe("The summary request: `structured` (Opal's sections and rules) or `opencode` (OpenCode's)"),
  model: z.string().min(1).nullable().describe("Model for summaries; null: the session's own model"),
  maxOutputTokens: positiveTokens.describe('The longest summary, in tokens'),
  timeoutMs: positiveCount.describe('How long one summary request may take'),
  contextWindow: positiveTokens
    .nullable()
    .describe("The summarizer model's window when it differs from the session's; null: the session's"),
  toolResultMaxChars: positiveCount.describe(
    'Tool results in the transcript sent to the summarizer are cut to this many characters',
  ),
  toolArgsMaxChars: positiveCount.describe(
    'Tool-call arguments in that transcript are cut to this many characters',
  ),
});

export const FileToolsSchema = z.strictObject({
  read: toolNames.describe('Tools that read a file (its path listed as read across compactions)'),
  write: toolNames.describe('Tools that write a file (listed as modified)'),
  edit: toolNames.describe('Tools that edit a file (listed as modified)'),
});

/**
 * Prepared-ahead compaction: once the context reaches `atRatio` × the trigger's point, a worker
 * summarises the history up to a cut planned for the trigger's moment without changing the
 * context, so the compaction at the trigger only has to finalize that draft (no LLM call while
 * the agent waits; one that starts while the draft is still being written waits for it).
 */
export const PrepareSchema = z.strictObject({
  atRatio: z
    .number()
    .gt(0)
    .lt(1)
    .describe("Start the draft once the context reaches this share of the trigger's token point"),
});
