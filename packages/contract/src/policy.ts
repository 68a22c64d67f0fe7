/**
 * The per-session compaction policy's schemas: what a client may send (`PolicyInputSchema`: an
 * optional preset plus deep-partial overrides) and what a resolved policy holds (`PolicySchema`).
 * They are part of the wire contract (sessions carry a policy), so they live here; the defaults,
 * the presets and the resolution (`resolvePolicy`) stay in @compactor/core, which re-exports these.
 * Each field's `.describe()` text is what a client reads: docs/API.md's "Policy" section and the
 * OpenAPI document show it (the JSDoc comments add the reference systems' names for readers here).
 */
import { z } from 'zod';

/** Names of the presets: the default, then one per reference system (docs/PRESETS.md). */
export const POLICY_PRESET_NAMES = ['default', 'opencode', 'opal', 'klaude', 'topic'] as const;
/** Validates a preset name (one of {@link POLICY_PRESET_NAMES}). */
export const PolicyPresetSchema = z.enum(POLICY_PRESET_NAMES);
/** `default` (DESIGN.md's table), `opencode`, `opal`, `klaude` (klaude-code) or `topic` (a topic-detecting assistant; docs/PRESETS.md). */
export type PolicyPreset = z.infer<typeof PolicyPresetSchema>;

const tokens = z.number().int().nonnegative();
const positiveTokens = z.number().int().positive();
/** Counts of other things (turns, messages, characters, milliseconds). */
const count = z.number().int().nonnegative();
const positiveCount = z.number().int().positive();
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

const PruningSchema = z.strictObject({
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

const KeepRecentFieldsSchema = z.strictObject({
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
const KeepRecentSchema = KeepRecentFieldsSchema.refine(
  (k) => k.maxTokens === null || k.minTokens <= k.maxTokens,
  {
    message: 'keepRecent.minTokens must not exceed keepRecent.maxTokens',
  },
);

const TopicSchema = z.strictObject({
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

const SummarizerSchema = z.strictObject({
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

const FileToolsSchema = z.strictObject({
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
const PrepareSchema = z.strictObject({
  atRatio: z
    .number()
    .gt(0)
    .lt(1)
    .describe("Start the draft once the context reaches this share of the trigger's token point"),
});

/** A fully resolved policy, as stored with a session. Every field is present. */
export const PolicySchema = z.strictObject({
  preset: PolicyPresetSchema,
  /** Automatic compaction (threshold and usage overflow); `false` also disables auto emergencies. */
  auto: z.boolean(),
  /** Prune old tool outputs after finished assistant turns and before summarising. */
  prune: z.boolean(),
  trigger: TriggerSchema,
  /** `hybrid`: last reported usage + stored counts since (Opal); `exact`: stored counts only. */
  estimate: z
    .enum(['hybrid', 'exact'])
    .describe(
      'How the status counts the context: `hybrid` the last reported usage plus the stored counts of what came after, never below the stored count nor above it by more than a quarter of the usable input; `exact` the stored counts only',
    ),
  /**
   * How prune and keep-recent budgets measure messages: `tokenizer` (the exact counts stored at
   * write time) or `chars`, the reference systems' estimate `round(characters / 4)` (OpenCode's
   * `Token.estimate`; Opal and klaude-code count about 4 characters a token). See token-measure.ts.
   */
  tokenCount: z
    .enum(['tokenizer', 'chars'])
    .describe(
      'How prune and keep-recent budgets measure messages: `tokenizer` (exact counts) or `chars` (characters / 4, as the reference agents estimate)',
    ),
  pruning: PruningSchema,
  keepRecent: KeepRecentSchema,
  /** Where a cut may land: the nearest user message (Opal) or any message (klaude-code). */
  cutAt: z
    .enum(['turn-start', 'message'])
    .describe('Where a cut may land: the nearest user message (`turn-start`) or any message'),
  splitTurnMinPrefix: positiveCount.describe(
    'A cut inside a turn whose prefix has at least this many messages summarises that prefix apart',
  ),
  /** A shorter prefix is kept by moving the cut to the turn start, or summarised with the history (Opal's code). */
  splitTurnShortPrefix: z
    .enum(['keep', 'summarize'])
    .describe('A shorter prefix is kept (the cut moves to the turn start) or summarised with the history'),
  strategy: z
    .enum(['summarize', 'truncate', 'topic'])
    .describe(
      'How a compaction shortens the history: an LLM summary, dropping the old messages, or topic detection',
    ),
  fallback: z
    .enum(['truncate', 'fail'])
    .describe("After the summarizer's last failed attempt: write a truncate summary, or fail the compaction"),
  topic: TopicSchema,
  /**
   * How the summary is stored: OpenCode's assistant message, a user message (klaude-code's
   * wording), Opal's user message `[Conversation summary — older messages were compacted]`, or
   * a system message (the topic reference's).
   */
  summaryMessage: z
    .enum(['opencode', 'user', 'opal', 'system'])
    .describe(
      "How the summary is stored: OpenCode's assistant message, a user message, Opal's user message, or a system message",
    ),
  /**
   * The user message a client appends after an automatic compaction so the agent goes on
   * (OpenCode: "Continue if you have next steps"); `null`: none. The `session.compacted` event
   * carries it (summary-messages.ts `continuationAfterCompaction`); the trigger never fires on it.
   */
  continueMessage: z
    .string()
    .min(1)
    .nullable()
    .describe(
      'The user message to append after an automatic compaction so the agent goes on (`session.compacted` carries it); null: none',
    ),
  summarizer: SummarizerSchema,
  /** Tool names per file operation, for the read/modified file lists kept across compactions. */
  fileTools: FileToolsSchema,
  instructions: z
    .string()
    .min(1)
    .nullable()
    .describe('Custom summary instructions appended to the summary prompt; null: none'),
  /**
   * Pin system messages (role `system`, not written by a compaction): never compacted, not counted
   * by the keep-recent cut, shown before the summary (REFERENCE: "instructions missing after compaction").
   */
  pinSystemMessages: z
    .boolean()
    .describe(
      'Pin system messages: never compacted, not counted by the keep-recent cut, shown before the summary',
    ),
  /** Summarise ahead of the trigger (see `PrepareSchema`); `null` (the default, every preset): off. */
  prepare: PrepareSchema.nullable().describe(
    'Summarise ahead of the trigger, so the compaction at the trigger only finalizes the draft (no LLM call while the agent waits); null: off',
  ),
});
/** A complete, validated policy: get one from `resolvePolicy` or `POLICY_PRESETS` (@compactor/core). */
export type Policy = z.infer<typeof PolicySchema>;
/** Tool-output pruning budgets (OpenCode), as prune.ts `selectPrunableParts` takes them. */
export type PruningPolicy = Policy['pruning'];
/** The budgets that choose what a prune selects (the cache knobs only decide when it runs). */
export type PruneBudgets = Pick<
  PruningPolicy,
  'protectTokens' | 'minimumTokens' | 'protectedTools' | 'protectUserTurns'
>;
/** Keep-recent budgets per compaction reason; cut-point.ts `keepRecentTokensFor` turns them into tokens. */
export type KeepRecentPolicy = Policy['keepRecent'];

/** A trigger override: any trigger field; `kind` switches to that trigger's defaults first. */
export const TriggerInputSchema = z
  .strictObject({
    ...OverflowTriggerSchema.shape,
    ...RatioTriggerSchema.shape,
    ...ReserveTriggerSchema.shape,
    ...TokensTriggerSchema.shape,
    kind: z
      .enum(['overflow', 'ratio', 'reserve', 'tokens'])
      .describe(
        'The rule: `overflow` (OpenCode), `ratio` (Opal), `reserve` (klaude-code) or `tokens` (the topic preset); a new kind starts from its defaults',
      ),
  })
  .partial();

/** What a client sends: an optional preset and deep-partial overrides. Unknown keys are rejected. */
export const PolicyInputSchema = z.strictObject({
  preset: PolicyPresetSchema.optional().describe('The preset the overrides are laid over'),
  auto: z
    .boolean()
    .optional()
    .describe(
      'Automatic compaction, at the trigger and when a reported usage overflows the window; false: neither',
    ),
  prune: z
    .boolean()
    .optional()
    .describe('Prune old tool outputs after finished assistant turns and before summarising'),
  trigger: TriggerInputSchema.optional().describe(
    'When automatic compaction fires: one rule per `kind`, each with its own fields',
  ),
  estimate: PolicySchema.shape.estimate.optional(),
  tokenCount: PolicySchema.shape.tokenCount.optional(),
  pruning: PruningSchema.partial().optional().describe('Which old tool outputs a prune clears, and when'),
  keepRecent: KeepRecentFieldsSchema.partial()
    .optional()
    .describe('How much recent history a compaction keeps verbatim, per reason'),
  cutAt: PolicySchema.shape.cutAt.optional(),
  splitTurnMinPrefix: PolicySchema.shape.splitTurnMinPrefix.optional(),
  splitTurnShortPrefix: PolicySchema.shape.splitTurnShortPrefix.optional(),
  strategy: PolicySchema.shape.strategy.optional(),
  fallback: PolicySchema.shape.fallback.optional(),
  topic: TopicSchema.partial().optional().describe('Topic mode (`strategy: "topic"`)'),
  summaryMessage: PolicySchema.shape.summaryMessage.optional(),
  continueMessage: PolicySchema.shape.continueMessage.optional(),
  summarizer: SummarizerSchema.partial().optional().describe('The summary request'),
  fileTools: FileToolsSchema.partial()
    .optional()
    .describe('Tool names per file operation, for the read and modified file lists kept across compactions'),
  instructions: PolicySchema.shape.instructions.optional(),
  pinSystemMessages: PolicySchema.shape.pinSystemMessages.optional(),
  prepare: PolicySchema.shape.prepare.optional(),
});
/** A policy as a client sends it, every field optional; `resolvePolicy` (@compactor/core) completes and validates it. */
export type PolicyInput = z.input<typeof PolicyInputSchema>;
/** A trigger override as a client sends it (any trigger field; `kind` switches the trigger first). */
export type TriggerInput = z.infer<typeof TriggerInputSchema>;
