/**
 * The per-session compaction policy: one zod schema, the defaults of DESIGN.md's policy table,
 * and named presets that reproduce each reference system.
 *
 * A client sends a {@link PolicyInput}: an optional `preset` plus deep-partial overrides.
 * {@link resolvePolicy} lays the overrides over the preset and validates the result, so a stored
 * session always carries a complete {@link Policy}. Objects merge key by key; arrays and scalars
 * replace. Where the reference systems disagree, the policy offers each behaviour and the `default` preset
 * (DESIGN.md's table) picks one; each other preset reproduces its reference system (docs/PRESETS.md).
 */
import { z } from 'zod';
import {
  OverflowTriggerSchema,
  POLICY_PRESET_NAMES,
  PolicyInputSchema,
  PolicySchema,
  RatioTriggerSchema,
  ReserveTriggerSchema,
  TokensTriggerSchema,
  type PolicyInput,
  type PolicyPreset,
  type Policy,
  type Trigger,
  type TriggerInput,
  type TriggerKind,
} from '@compactor/contract';
import { DEFAULT_FILE_TOOLS } from './file-ops';

// The schemas are the wire contract's (clients send policies); core owns what they mean.
export {
  POLICY_PRESET_NAMES,
  PolicyInputSchema,
  PolicyPresetSchema,
  PolicySchema,
  TriggerSchema,
  type KeepRecentPolicy,
  type Policy,
  type PolicyInput,
  type PolicyPreset,
  type PruneBudgets,
  type PruningPolicy,
  type Trigger,
  type TriggerKind,
} from '@compactor/contract';

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

/** OpenCode's synthetic user message after an automatic compaction (docs/PRESETS.md, `opencode`). */
export const OPENCODE_CONTINUE_MESSAGE = 'Continue if you have next steps';

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
  preset: 'default',
  auto: true,
  prune: true,
  trigger: TRIGGER_DEFAULTS.overflow,
  estimate: 'hybrid',
  tokenCount: 'tokenizer',
  pruning: {
    protectTokens: 40_000,
    minimumTokens: 20_000,
    protectedTools: ['skill'],
    protectUserTurns: 2,
    // On for models with cache pricing: an after-turn prune that breaks a warm cache must pay it back.
    cacheAware: null,
    cacheHorizonTurns: 10,
  },
  keepRecent: {
    autoRatio: 0.25,
    emergencyRatio: 0.2,
    manualTokens: DEFAULT_KEEP_RECENT_TOKENS,
    manualCappedByAuto: true,
    minTokens: 0,
    maxTokens: null,
    cutWhen: 'reached',
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
  continueMessage: null,
  summarizer: {
    prompt: 'structured',
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
  // No reference compacts its system prompt (rebuilt each turn, or assembled apart by the topic reference):
  // pinning reproduces them all, so every preset keeps it.
  pinSystemMessages: true,
  // Summarising ahead pays for drafts that may go unused: opt-in, off in every preset.
  prepare: null,
};

/**
 * What each preset changes relative to the `default` policy. Every rule and deliberate deviation,
 * with its reference's wording, is listed in docs/PRESETS.md; the table tests (presets.*.test.ts) hold
 * each preset to its reference's numbers.
 */
const PRESET_OVERRIDES: Record<PolicyPreset, PolicyOverrides> = {
  default: {},
  // OpenCode: its summary request and compaction-agent directive, the synthetic "Continue if
  // you have next steps" after an automatic compaction, and its after-turn prune whatever the
  // prompt cache.
  opencode: {
    continueMessage: OPENCODE_CONTINUE_MESSAGE,
    summarizer: { prompt: 'opencode' },
    pruning: { cacheAware: false },
  },
  // Opal has no tool-output pruning; it summarises at 80 % into its own user message (whose
  // prefix it looks for to find the previous summary), its code summarises a short split-turn
  // prefix with the history, and manual compaction keeps 20,000 whatever the window.
  opal: {
    prune: false,
    trigger: TRIGGER_DEFAULTS.ratio,
    keepRecent: { manualCappedByAuto: false, cutWhen: 'exceeded' },
    splitTurnShortPrefix: 'summarize',
    summaryMessage: 'opal',
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
  // The topic preset (docs/PRESETS.md): a token trigger (default 6000), exact counts, topic detection whose own summary is
  // the summary, a system summary of at most 500 tokens, a 3000-token verbatim window, and cuts
  // exactly at the verbatim window's start or the boundary, whatever the message's role.
  topic: {
    prune: false,
    trigger: TRIGGER_DEFAULTS.tokens,
    estimate: 'exact',
    cutAt: 'message',
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
function mergeTrigger(base: Trigger, override: TriggerInput | undefined): Trigger {
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

/** The default policy: DESIGN.md's table, the `default` preset. Frozen. */
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
 * The complete policy for a client's input: its preset (default `default`) with the overrides
 * laid over it. Throws {@link PolicyError} with one readable line per problem.
 */
export function resolvePolicy(input: PolicyInput = {}): Policy {
  const parsed = PolicyInputSchema.safeParse(input);
  if (!parsed.success)
    throw new PolicyError(`invalid policy:\n${z.prettifyError(parsed.error)}`, parsed.error.issues);
  const { preset = 'default', ...overrides } = parsed.data;
  return parsePolicy(applyOverrides(POLICY_PRESETS[preset], overrides, preset), 'invalid policy');
}

/**
 * {@link resolvePolicy}, frozen: a policy that may be shared between callers (a memo of stored
 * inputs) cannot be changed by one of them.
 */
export function resolveFrozenPolicy(input: PolicyInput = {}): Policy {
  return deepFreeze(resolvePolicy(input));
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
