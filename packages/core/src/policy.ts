/**
 * The per-session compaction policy: one zod schema, the defaults of DESIGN.md's policy table,
 * and named presets that reproduce each reference system.
 *
 * A client sends a {@link PolicyInput}: an optional `preset` plus deep-partial overrides.
 * {@link resolvePolicy} lays the overrides over the preset and validates the result, so a stored
 * session always carries a complete {@link Policy}. Objects merge key by key; arrays and scalars
 * replace. Where the seeds disagree, the policy offers each behaviour and the default (the
 * `opencode` preset, which is DESIGN.md's table) wins.
 */
import { z } from 'zod';
import { DEFAULT_FILE_TOOLS } from './file-ops';

/** Names of the presets, one per reference system (see the README for what each reproduces). */
export const POLICY_PRESET_NAMES = ['opencode', 'opal', 'klaude', 'topic'] as const;
/** Validates a preset name (one of {@link POLICY_PRESET_NAMES}). */
export const PolicyPresetSchema = z.enum(POLICY_PRESET_NAMES);
/** `opencode` (the default), `opal`, `klaude` (klaude-code) or `topic` (seed 002). */
export type PolicyPreset = z.infer<typeof PolicyPresetSchema>;

const tokens = z.number().int().nonnegative();
const positiveTokens = z.number().int().positive();
/** A fraction of the context window. */
const windowRatio = z.number().gt(0).lte(1);
const toolNames = z.array(z.string().min(1));

/** OpenCode: `input + cache.read + output > usable`, usable = input limit or window − min(maxOutput, cap). */
const OverflowTriggerSchema = z.strictObject({
  kind: z.literal('overflow'),
  /** Cap on the output reserve subtracted from the window (OpenCode's `OUTPUT_TOKEN_MAX`). */
  outputReserveCap: positiveTokens,
});
/** Opal: estimated context ≥ `ratio` × window. */
const RatioTriggerSchema = z.strictObject({ kind: z.literal('ratio'), ratio: windowRatio });
/**
 * klaude-code: context > window − reserve, reserve = min(reserveTokens, max(minReserveTokens,
 * reserveRatio × window)). "16384 or 25 %" resolves to the smaller, so small windows still have room.
 */
const ReserveTriggerSchema = z.strictObject({
  kind: z.literal('reserve'),
  reserveTokens: positiveTokens,
  reserveRatio: windowRatio,
  minReserveTokens: tokens,
});
/** Seed 002: history tokens > `compaction_trigger_tokens`, whatever the window. */
const TokensTriggerSchema = z.strictObject({ kind: z.literal('tokens'), tokens: positiveTokens });

/** When auto compaction fires: one reference system's rule per `kind` (the variant schemas above). */
export const TriggerSchema = z.discriminatedUnion('kind', [
  OverflowTriggerSchema,
  RatioTriggerSchema,
  ReserveTriggerSchema,
  TokensTriggerSchema,
]);
/** A resolved trigger; {@link TRIGGER_DEFAULTS} holds each kind's defaults. */
export type Trigger = z.infer<typeof TriggerSchema>;
/** `overflow` (OpenCode, the default), `ratio` (Opal), `reserve` (klaude-code) or `tokens` (seed 002). */
export type TriggerKind = Trigger['kind'];

const PruningSchema = z.strictObject({
  /** Newest completed tool-output tokens never pruned (OpenCode `PRUNE_PROTECT`). */
  protectTokens: tokens,
  /** Prune only when strictly more than this would be saved (OpenCode `PRUNE_MINIMUM`). */
  minimumTokens: tokens,
  /** Tools whose outputs are never pruned. */
  protectedTools: toolNames,
  /** The newest user turns (a user message and what follows it) pruning never touches. */
  protectUserTurns: z.number().int().nonnegative(),
});

const KeepRecentFieldsSchema = z.strictObject({
  /** Auto compaction keeps `autoRatio` × window (Opal: window / 4). */
  autoRatio: windowRatio,
  /** Emergency (overflow) compaction keeps `emergencyRatio` × window (Opal: window / 5). */
  emergencyRatio: windowRatio,
  /** Manual compaction keeps this many tokens; `null` = the auto budget (klaude-code). */
  manualTokens: positiveTokens.nullable(),
  /** Floor of the ratio budgets (klaude-code: 4096). */
  minTokens: tokens,
  /** Ceiling of the ratio budgets, `null` = none (klaude-code: 20000). */
  maxTokens: positiveTokens.nullable(),
});
const KeepRecentSchema = KeepRecentFieldsSchema.refine(
  (k) => k.maxTokens === null || k.minTokens <= k.maxTokens,
  {
    message: 'keepRecent.minTokens must not exceed keepRecent.maxTokens',
  },
);

const TopicSchema = z.strictObject({
  /** User/assistant exchanges always kept verbatim (seed 002 `min_verbatim_exchanges`). */
  minVerbatimExchanges: z.number().int().nonnegative(),
  /** A detected boundary below this confidence is ignored (seed 002: 0.5). */
  minConfidence: z.number().min(0).max(1),
  /** Recent history always kept verbatim; the keep-recent budget in topic mode. */
  verbatimWindowTokens: positiveTokens,
  /** At most this many recent messages are shown to the boundary detector. */
  maxMessages: z.number().int().positive(),
  /** Each message shown to the detector is cut to this many characters. */
  maxCharsPerMessage: z.number().int().positive(),
  /**
   * A `summarize` case's summary: the detector's own `summary` (seed 002, no second LLM call), or
   * the normal summarizer, which merges the previous summary and writes the structured sections.
   */
  summaryFrom: z.enum(['detector', 'summarizer']),
});

const SummarizerSchema = z.strictObject({
  /** Model for summaries; `null` = the session's own model. */
  model: z.string().min(1).nullable(),
  maxOutputTokens: positiveTokens,
  timeoutMs: z.number().int().positive(),
  /** The summarizer model's window when it differs from the session's; `null` = the session's. */
  contextWindow: positiveTokens.nullable(),
  /** Tool results in the transcript are cut to this many characters. */
  toolResultMaxChars: z.number().int().positive(),
  /** Tool-call arguments in the transcript are cut to this many characters. */
  toolArgsMaxChars: z.number().int().positive(),
});

const FileToolsSchema = z.strictObject({ read: toolNames, write: toolNames, edit: toolNames });

/** A fully resolved policy, as stored with a session. Every field is present. */
export const PolicySchema = z.strictObject({
  preset: PolicyPresetSchema,
  /** Automatic compaction (threshold and usage overflow); `false` also disables auto emergencies. */
  auto: z.boolean(),
  /** Prune old tool outputs after finished assistant turns and before summarising. */
  prune: z.boolean(),
  trigger: TriggerSchema,
  /** `hybrid`: last reported usage + stored counts since (Opal); `exact`: stored counts only. */
  estimate: z.enum(['hybrid', 'exact']),
  pruning: PruningSchema,
  keepRecent: KeepRecentSchema,
  /** Where a cut may land: the nearest user message (Opal) or any message (klaude-code). */
  cutAt: z.enum(['turn-start', 'message']),
  /** A cut inside a turn whose prefix has at least this many messages gets its own summary. */
  splitTurnMinPrefix: z.number().int().positive(),
  /** A shorter prefix is kept by moving the cut to the turn start, or summarised with the history (Opal's code). */
  splitTurnShortPrefix: z.enum(['keep', 'summarize']),
  strategy: z.enum(['summarize', 'truncate', 'topic']),
  /** After the last failed attempt: write a truncate summary, or fail the compaction. */
  fallback: z.enum(['truncate', 'fail']),
  topic: TopicSchema,
  /** How the summary is stored: OpenCode's assistant message, a user message, or a system message. */
  summaryMessage: z.enum(['opencode', 'user', 'system']),
  summarizer: SummarizerSchema,
  /** Tool names per file operation, for the read/modified file lists kept across compactions. */
  fileTools: FileToolsSchema,
  /** Default custom summary instructions, appended to the summary prompt. */
  instructions: z.string().min(1).nullable(),
  /**
   * Pin system messages (role `system`, not written by a compaction): never compacted, not counted
   * by the keep-recent cut, shown before the summary (REFERENCE: "instructions missing after compaction").
   */
  pinSystemMessages: z.boolean(),
});
/** A complete, validated policy: get one from {@link resolvePolicy} or {@link POLICY_PRESETS}. */
export type Policy = z.infer<typeof PolicySchema>;
/** Tool-output pruning budgets (OpenCode), as prune.ts `selectPrunableParts` takes them. */
export type PruningPolicy = Policy['pruning'];
/** Keep-recent budgets per compaction reason; cut-point.ts `keepRecentTokensFor` turns them into tokens. */
export type KeepRecentPolicy = Policy['keepRecent'];

/** A trigger override: any trigger field; `kind` switches to that trigger's defaults first. */
const TriggerInputSchema = z
  .strictObject({
    ...OverflowTriggerSchema.shape,
    ...RatioTriggerSchema.shape,
    ...ReserveTriggerSchema.shape,
    ...TokensTriggerSchema.shape,
    kind: z.enum(['overflow', 'ratio', 'reserve', 'tokens']),
  })
  .partial();

/** What a client sends: an optional preset and deep-partial overrides. Unknown keys are rejected. */
export const PolicyInputSchema = z.strictObject({
  preset: PolicyPresetSchema.optional(),
  auto: z.boolean().optional(),
  prune: z.boolean().optional(),
  trigger: TriggerInputSchema.optional(),
  estimate: PolicySchema.shape.estimate.optional(),
  pruning: PruningSchema.partial().optional(),
  keepRecent: KeepRecentFieldsSchema.partial().optional(),
  cutAt: PolicySchema.shape.cutAt.optional(),
  splitTurnMinPrefix: PolicySchema.shape.splitTurnMinPrefix.optional(),
  splitTurnShortPrefix: PolicySchema.shape.splitTurnShortPrefix.optional(),
  strategy: PolicySchema.shape.strategy.optional(),
  fallback: PolicySchema.shape.fallback.optional(),
  topic: TopicSchema.partial().optional(),
  summaryMessage: PolicySchema.shape.summaryMessage.optional(),
  summarizer: SummarizerSchema.partial().optional(),
  fileTools: FileToolsSchema.partial().optional(),
  instructions: PolicySchema.shape.instructions.optional(),
  pinSystemMessages: PolicySchema.shape.pinSystemMessages.optional(),
});
/** A policy as a client sends it, every field optional; {@link resolvePolicy} completes and validates it. */
export type PolicyInput = z.input<typeof PolicyInputSchema>;
type PolicyOverrides = Omit<PolicyInput, 'preset'>;

/** An invalid policy. `message` lists every problem with its path, one per line. */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
  constructor(
    message: string,
    /** The zod issues behind the message, when zod found them. */
    readonly issues: readonly z.core.$ZodIssue[] = [],
  ) {
    super(message);
  }
}

/** The default manual keep-recent budget (Opal, klaude-code), also an unlimited window's last resort. */
export const DEFAULT_KEEP_RECENT_TOKENS = 20_000;

/**
 * Defaults of each trigger kind, used when an override switches `trigger.kind`. `outputReserveCap`
 * (OpenCode's 32,000) is also an unknown model's output limit and the other triggers' reserve cap.
 */
export const TRIGGER_DEFAULTS = {
  overflow: { kind: 'overflow', outputReserveCap: 32_000 },
  ratio: { kind: 'ratio', ratio: 0.8 },
  reserve: { kind: 'reserve', reserveTokens: 16_384, reserveRatio: 0.25, minReserveTokens: 2048 },
  tokens: { kind: 'tokens', tokens: 6000 },
} as const satisfies { [K in TriggerKind]: Extract<Trigger, { kind: K }> };

const DEFAULT_POLICY_VALUES: Policy = {
  preset: 'opencode',
  auto: true,
  prune: true,
  trigger: TRIGGER_DEFAULTS.overflow,
  estimate: 'hybrid',
  pruning: { protectTokens: 40_000, minimumTokens: 20_000, protectedTools: ['skill'], protectUserTurns: 2 },
  keepRecent: {
    autoRatio: 0.25,
    emergencyRatio: 0.2,
    manualTokens: DEFAULT_KEEP_RECENT_TOKENS,
    minTokens: 0,
    maxTokens: null,
  },
  cutAt: 'turn-start',
  splitTurnMinPrefix: 5,
  splitTurnShortPrefix: 'keep',
  strategy: 'summarize',
  fallback: 'truncate',
  topic: {
    minVerbatimExchanges: 2,
    minConfidence: 0.5,
    verbatimWindowTokens: 3000,
    maxMessages: 50,
    maxCharsPerMessage: 1000,
    summaryFrom: 'summarizer',
  },
  summaryMessage: 'opencode',
  summarizer: {
    model: null,
    maxOutputTokens: 8192,
    timeoutMs: 120_000,
    contextWindow: null,
    toolResultMaxChars: 2000,
    toolArgsMaxChars: 1000,
  },
  // One list for the whole codebase: file-ops matches names case- and separator-insensitively.
  fileTools: {
    read: [...DEFAULT_FILE_TOOLS.read],
    write: [...DEFAULT_FILE_TOOLS.write],
    edit: [...DEFAULT_FILE_TOOLS.edit],
  },
  instructions: null,
  // No reference compacts its system prompt (rebuilt each turn, or assembled apart in seed 002):
  // pinning reproduces them all, so every preset keeps it.
  pinSystemMessages: true,
};

/** What each preset changes relative to the default (`opencode`) policy. */
const PRESET_OVERRIDES: Record<PolicyPreset, PolicyOverrides> = {
  opencode: {},
  // Opal has no tool-output pruning; it summarises at 80 % into a user message, and its code
  // summarises a short split-turn prefix with the history instead of keeping it.
  opal: {
    prune: false,
    trigger: TRIGGER_DEFAULTS.ratio,
    splitTurnShortPrefix: 'summarize',
    summaryMessage: 'user',
    summarizer: { timeoutMs: 30_000, toolResultMaxChars: 500, toolArgsMaxChars: 200 },
  },
  // klaude-code: reserve trigger, keep min(20000, max(4096, 35 %)) for every reason, cut at any
  // message that is not a tool result and always summarise a split turn's prefix separately.
  klaude: {
    prune: false,
    trigger: TRIGGER_DEFAULTS.reserve,
    keepRecent: {
      autoRatio: 0.35,
      emergencyRatio: 0.35,
      manualTokens: null,
      minTokens: 4096,
      maxTokens: 20_000,
    },
    cutAt: 'message',
    splitTurnMinPrefix: 1,
    fallback: 'fail',
    summaryMessage: 'user',
    summarizer: { maxOutputTokens: 13_107, toolResultMaxChars: 4000, toolArgsMaxChars: 2000 },
  },
  // Seed 002: a token trigger (default 6000), exact counts, topic detection whose own summary is
  // the summary, a system summary of at most 500 tokens, and a 3000-token verbatim window.
  topic: {
    prune: false,
    trigger: TRIGGER_DEFAULTS.tokens,
    estimate: 'exact',
    strategy: 'topic',
    topic: { summaryFrom: 'detector' },
    summaryMessage: 'system',
    summarizer: { maxOutputTokens: 500 },
  },
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `patch` laid over `base`: objects merge key by key, anything else (arrays too) replaces. */
function deepMerge<T>(base: T, patch: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(patch)) return (patch === undefined ? base : patch) as T;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) merged[key] = deepMerge(base[key], value);
  }
  return merged as T;
}

const TRIGGER_FIELDS: { [K in TriggerKind]: readonly string[] } = {
  overflow: Object.keys(OverflowTriggerSchema.shape),
  ratio: Object.keys(RatioTriggerSchema.shape),
  reserve: Object.keys(ReserveTriggerSchema.shape),
  tokens: Object.keys(TokensTriggerSchema.shape),
};

/** A trigger override applied to a trigger: a new `kind` starts from that kind's defaults. */
function mergeTrigger(base: Trigger, override: z.infer<typeof TriggerInputSchema> | undefined): Trigger {
  if (override === undefined) return base;
  const kind = override.kind ?? base.kind;
  const start: Trigger = kind === base.kind ? base : TRIGGER_DEFAULTS[kind];
  for (const field of Object.keys(override)) {
    if (!TRIGGER_FIELDS[kind].includes(field)) {
      throw new PolicyError(
        `invalid policy: trigger.${field} does not apply to trigger kind "${kind}" (its fields: ${TRIGGER_FIELDS[kind].join(', ')})`,
      );
    }
  }
  return { ...start, ...override, kind } as Trigger;
}

function applyOverrides(base: Policy, overrides: PolicyOverrides, preset: PolicyPreset): unknown {
  const { trigger, ...rest } = overrides;
  return { ...deepMerge(base, rest), preset, trigger: mergeTrigger(base.trigger, trigger) };
}

function parsePolicy(candidate: unknown, context: string): Policy {
  const result = PolicySchema.safeParse(candidate);
  if (!result.success) {
    throw new PolicyError(`${context}:\n${z.prettifyError(result.error)}`, result.error.issues);
  }
  return result.data;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** The default policy: DESIGN.md's table, which is also the `opencode` preset. Frozen. */
export const DEFAULT_POLICY: Policy = deepFreeze(parsePolicy(DEFAULT_POLICY_VALUES, 'default policy'));

/** Every preset, fully resolved. Frozen: resolve a copy with {@link resolvePolicy} to change one. */
export const POLICY_PRESETS: Readonly<Record<PolicyPreset, Policy>> = deepFreeze(
  Object.fromEntries(
    POLICY_PRESET_NAMES.map((name) => [
      name,
      parsePolicy(applyOverrides(DEFAULT_POLICY, PRESET_OVERRIDES[name], name), `preset ${name}`),
    ]),
  ) as Record<PolicyPreset, Policy>,
);

/**
 * The complete policy for a client's input: its preset (default `opencode`) with the overrides
 * laid over it. Throws {@link PolicyError} with one readable line per problem.
 */
export function resolvePolicy(input: PolicyInput = {}): Policy {
  const parsed = PolicyInputSchema.safeParse(input);
  if (!parsed.success)
    throw new PolicyError(`invalid policy:\n${z.prettifyError(parsed.error)}`, parsed.error.issues);
  const { preset = 'opencode', ...overrides } = parsed.data;
  return parsePolicy(applyOverrides(POLICY_PRESETS[preset], overrides, preset), 'invalid policy');
}

/**
 * Two inputs combined, `patch` winning (for `PATCH /sessions/:id`): nested objects merge, a new
 * `preset` or `trigger.kind` keeps the other overrides. Validate the result with {@link resolvePolicy}.
 */
export function mergePolicyInputs(base: PolicyInput, patch: PolicyInput): PolicyInput {
  const merged = deepMerge(base, patch);
  // A trigger of another kind replaces the old trigger override instead of mixing its fields in.
  if (patch.trigger?.kind !== undefined && patch.trigger.kind !== base.trigger?.kind)
    merged.trigger = patch.trigger;
  return merged;
}
