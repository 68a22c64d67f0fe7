/**
 * The per-session compaction policy's schemas: what a client may send (`PolicyInputSchema`: an
 * optional preset plus deep-partial overrides) and what a resolved policy holds (`PolicySchema`).
 * They are part of the wire contract (sessions carry a policy), so they live here; the defaults,
 * the presets and the resolution (`resolvePolicy`) stay in @compactor/core, which re-exports these.
 * Each field's `.describe()` text is what a client reads: docs/API.md's "Policy" section and the
 * OpenAPI document show it (the JSDoc comments add the reference systems' names for readers here).
 * The nested sections and the trigger variants are in policy-fields.ts; this file assembles them.
 */
import { z } from 'zod';
import {
  FileToolsSchema,
  KeepRecentFieldsSchema,
  KeepRecentSchema,
  OverflowTriggerSchema,
  positiveCount,
  PrepareSchema,
  PruningSchema,
  RatioTriggerSchema,
  ReserveTriggerSchema,
  SummarizerSchema,
  TokensTriggerSchema,
  TopicSchema,
  TriggerSchema,
} from './policy-fields.js';

// The trigger variants are part of the package's surface (core re-exports them and reads each
// kind's fields from them); the other sections are reached through PolicySchema only.
export {
  OverflowTriggerSchema,
  RatioTriggerSchema,
  ReserveTriggerSchema,
  TokensTriggerSchema,
  TriggerSchema,
  type Trigger,
  type TriggerKind,
} from './policy-fields.js';

/** Names of the presets: the default, then one per reference system (docs/PRESETS.md). */
export const POLICY_PRESET_NAMES = ['default', 'opencode', 'opal', 'klaude', 'topic'] as const;
/** Validates a preset name (one of {@link POLICY_PRESET_NAMES}). */
export const PolicyPresetSchema = z.enum(POLICY_PRESET_NAMES);
/** `default` (DESIGN.md's table), `opencode`, `opal`, `klaude` (klaude-code) or `topic` (a topic-detecting assistant; docs/PRESETS.md). */
export type PolicyPreset = z.infer<typeof PolicyPresetSchema>;

/** A fully resolved policy, as stored with a session. Every field is present. */
/** Which tool calls are tasks: tool names, `name[field]` when a truthy input field makes it one. */
export const TasksPolicySchema = z.strictObject({
  tools: z
    .array(z.string().regex(/^[A-Za-z0-9_.:-]{1,64}(?:\[[A-Za-z0-9_.-]{1,64}\])?$/))
    .max(100)
    .describe(
      "Tool names whose calls are tasks (case- and separator-insensitive); `Bash[run_in_background]`: only calls whose input has that field true. A client marks other calls by listing their ids in the message's `metadata.taskCallIds`",
    ),
});

/** How many images the served context keeps verbatim (docs/MEDIA.md); each field absent: core's default. */
export const MediaPolicySchema = z.strictObject({
  keepImages: z
    .number()
    .int()
    .min(0)
    .max(1000)
    .optional()
    .describe('The newest this many images are served as they are; older ones as a marker (default 20)'),
  keepTokens: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      "And at most this many tokens of them, counted as the session's model counts images (default 40000)",
    ),
});

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
  /** Which tool calls are tasks (docs/TASKS.md); absent: core's `DEFAULT_TASK_TOOLS`. */
  media: MediaPolicySchema.optional().describe(
    'The media budget: how many of the newest images the served context keeps verbatim (docs/MEDIA.md)',
  ),
  tasks: TasksPolicySchema.optional().describe(
    'Sub-agents and background tasks carried across compactions (docs/TASKS.md); absent: the defaults for Claude Code, Codex and OpenCode',
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
  tasks: PolicySchema.shape.tasks,
  media: PolicySchema.shape.media,
});
/** A policy as a client sends it, every field optional; `resolvePolicy` (@compactor/core) completes and validates it. */
export type PolicyInput = z.input<typeof PolicyInputSchema>;
/** A trigger override as a client sends it (any trigger field; `kind` switches the trigger first). */
export type TriggerInput = z.infer<typeof TriggerInputSchema>;
