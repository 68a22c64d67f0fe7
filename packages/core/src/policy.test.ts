import { describe, expect, it } from 'vitest';
import { fileOpsOfToolPart } from './file-ops';
import { toolPart } from './test-support/builders';
import {
  DEFAULT_POLICY,
  mergePolicyInputs,
  POLICY_PRESET_NAMES,
  POLICY_PRESETS,
  PolicyError,
  PolicyInputSchema,
  PolicySchema,
  resolvePolicy,
  resolveFrozenPolicy,
  TRIGGER_DEFAULTS,
  type PolicyInput,
} from './policy';

describe('DEFAULT_POLICY: DESIGN.md policy table', () => {
  it.each([
    ['auto', DEFAULT_POLICY.auto, true],
    ['prune', DEFAULT_POLICY.prune, true],
    [
      'trigger (OpenCode overflow, cap 32000)',
      DEFAULT_POLICY.trigger,
      { kind: 'overflow', outputReserveCap: 32_000 },
    ],
    ['estimate', DEFAULT_POLICY.estimate, 'hybrid'],
    ['pruning.protectTokens', DEFAULT_POLICY.pruning.protectTokens, 40_000],
    ['pruning.minimumTokens', DEFAULT_POLICY.pruning.minimumTokens, 20_000],
    ['pruning.protectedTools', DEFAULT_POLICY.pruning.protectedTools, ['skill']],
    ['pruning.protectUserTurns', DEFAULT_POLICY.pruning.protectUserTurns, 2],
    ['pruning.cacheAware (on for priced models)', DEFAULT_POLICY.pruning.cacheAware, null],
    ['pruning.cacheHorizonTurns', DEFAULT_POLICY.pruning.cacheHorizonTurns, 10],
    ['keepRecent.autoRatio (window / 4)', DEFAULT_POLICY.keepRecent.autoRatio, 0.25],
    ['keepRecent.emergencyRatio (window / 5)', DEFAULT_POLICY.keepRecent.emergencyRatio, 0.2],
    ['keepRecent.manualTokens', DEFAULT_POLICY.keepRecent.manualTokens, 20_000],
    ['cutAt', DEFAULT_POLICY.cutAt, 'turn-start'],
    ['splitTurnMinPrefix', DEFAULT_POLICY.splitTurnMinPrefix, 5],
    ['splitTurnShortPrefix', DEFAULT_POLICY.splitTurnShortPrefix, 'keep'],
    ['strategy', DEFAULT_POLICY.strategy, 'summarize'],
    ['fallback', DEFAULT_POLICY.fallback, 'truncate'],
    ['topic.minVerbatimExchanges', DEFAULT_POLICY.topic.minVerbatimExchanges, 2],
    ['topic.minConfidence', DEFAULT_POLICY.topic.minConfidence, 0.5],
    ['topic.maxMessages', DEFAULT_POLICY.topic.maxMessages, 50],
    ['topic.maxCharsPerMessage', DEFAULT_POLICY.topic.maxCharsPerMessage, 1000],
    ['topic.summaryFrom (the normal summarizer)', DEFAULT_POLICY.topic.summaryFrom, 'summarizer'],
    ['summaryMessage', DEFAULT_POLICY.summaryMessage, 'opencode'],
    ['summarizer.prompt (structured, Opal)', DEFAULT_POLICY.summarizer.prompt, 'structured'],
    ['tokenCount (exact counts)', DEFAULT_POLICY.tokenCount, 'tokenizer'],
    ['continueMessage (none)', DEFAULT_POLICY.continueMessage, null],
    ['summarizer.model (session model)', DEFAULT_POLICY.summarizer.model, null],
    ['summarizer.toolResultMaxChars', DEFAULT_POLICY.summarizer.toolResultMaxChars, 2000],
    ['instructions', DEFAULT_POLICY.instructions, null],
    ['pinSystemMessages', DEFAULT_POLICY.pinSystemMessages, true],
  ])('%s', (_name, actual, expected) => {
    expect(actual).toEqual(expected);
  });

  it('is the default preset and what an empty input resolves to', () => {
    expect(POLICY_PRESETS.default).toEqual(DEFAULT_POLICY);
    expect(resolvePolicy()).toEqual(DEFAULT_POLICY);
    expect(resolvePolicy({})).toEqual(DEFAULT_POLICY);
  });

  it.each([
    ['Claude Code', 'read', 'Read', { file_path: 'a.ts' }],
    ['Claude Code', 'write', 'Write', { file_path: 'a.ts' }],
    ['Claude Code', 'edit', 'MultiEdit', { file_path: 'a.ts' }],
    ['Claude Code', 'edit', 'NotebookEdit', { notebook_path: 'a.ts' }],
    ['Gemini CLI', 'read', 'read_file', { absolute_path: 'a.ts' }],
    ['Gemini CLI', 'write', 'write_file', { file_path: 'a.ts' }],
    ['Gemini CLI', 'edit', 'replace', { file_path: 'a.ts' }],
    ['OpenCode and pi', 'read', 'read', { filePath: 'a.ts' }],
    ['OpenCode and pi', 'edit', 'edit', { path: 'a.ts' }],
    ['SWE-agent', 'edit', 'str_replace_editor', { command: 'str_replace', path: 'a.ts' }],
    ['Codex', 'edit', 'apply_patch', { input: '*** Begin Patch\n*** Update File: a.ts\n*** End Patch' }],
  ] as const)('the default fileTools recognise %s: %s by %s', (_agent, operation, tool, input) => {
    const part = toolPart(tool, 10, { input });
    expect(fileOpsOfToolPart(part, DEFAULT_POLICY.fileTools)).toEqual([{ kind: operation, path: 'a.ts' }]);
  });

  it('is frozen, and resolved policies are independent copies', () => {
    expect(() => {
      (DEFAULT_POLICY.pruning as { protectTokens: number }).protectTokens = 1;
    }).toThrow(TypeError);
    const policy = resolvePolicy();
    policy.pruning.protectedTools.push('task');
    expect(DEFAULT_POLICY.pruning.protectedTools).toEqual(['skill']);
  });
});

describe('POLICY_PRESETS reproduce each reference system', () => {
  it.each([
    ['opal', 'trigger', { kind: 'ratio', ratio: 0.8 }],
    ['opal', 'prune', false],
    ['opal', 'summaryMessage', 'opal'],
    ['opal', 'splitTurnShortPrefix', 'summarize'],
    [
      'opal',
      'keepRecent',
      {
        autoRatio: 0.25,
        emergencyRatio: 0.2,
        manualTokens: 20_000,
        manualCappedByAuto: false,
        minTokens: 0,
        maxTokens: null,
        cutWhen: 'exceeded',
      },
    ],
    [
      'klaude',
      'trigger',
      { kind: 'reserve', reserveTokens: 16_384, reserveRatio: 0.25, minReserveTokens: 2048 },
    ],
    [
      'klaude',
      'keepRecent',
      {
        autoRatio: 0.35,
        emergencyRatio: 0.35,
        manualTokens: null,
        manualCappedByAuto: true,
        minTokens: 4096,
        maxTokens: 20_000,
        cutWhen: 'reached',
      },
    ],
    ['klaude', 'cutAt', 'message'],
    ['opencode', 'continueMessage', 'Continue if you have next steps'],
    ['opencode', 'summaryMessage', 'opencode'],
    [
      'opencode',
      'pruning',
      {
        protectTokens: 40_000,
        minimumTokens: 20_000,
        protectedTools: ['skill'],
        protectUserTurns: 2,
        cacheAware: false,
        cacheHorizonTurns: 10,
      },
    ],
    ['klaude', 'splitTurnMinPrefix', 1],
    ['klaude', 'summaryMessage', 'user'],
    ['topic', 'trigger', { kind: 'tokens', tokens: 6000 }],
    ['topic', 'strategy', 'topic'],
    ['topic', 'cutAt', 'message'],
    ['topic', 'estimate', 'exact'],
    ['topic', 'summaryMessage', 'system'],
    [
      'topic',
      'topic',
      {
        minVerbatimExchanges: 2,
        minConfidence: 0.5,
        verbatimWindowTokens: 3000,
        maxMessages: 50,
        maxCharsPerMessage: 1000,
        summaryFrom: 'detector',
      },
    ],
    ...POLICY_PRESET_NAMES.map((name) => [name, 'pinSystemMessages', true] as const),
  ] as const)('%s: %s', (preset, field, expected) => {
    expect(POLICY_PRESETS[preset][field]).toEqual(expected);
    expect(resolvePolicy({ preset })[field]).toEqual(expected);
  });

  it.each(POLICY_PRESET_NAMES)('%s is a valid policy naming itself', (name) => {
    expect(PolicySchema.parse(POLICY_PRESETS[name])).toEqual(POLICY_PRESETS[name]);
    expect(POLICY_PRESETS[name].preset).toBe(name);
  });

  it('topic limits its summary to 500 tokens (summary_budget_tokens)', () => {
    expect(POLICY_PRESETS.topic.summarizer.maxOutputTokens).toBe(500);
  });
});

describe('resolvePolicy: preset plus deep-partial overrides', () => {
  it('merges nested objects key by key and keeps the siblings', () => {
    const policy = resolvePolicy({
      preset: 'opal',
      pruning: { protectTokens: 10_000 },
      summarizer: { model: 'gpt-4o-mini' },
    });
    expect(policy.pruning).toEqual({ ...POLICY_PRESETS.opal.pruning, protectTokens: 10_000 });
    expect(policy.summarizer).toEqual({ ...POLICY_PRESETS.opal.summarizer, model: 'gpt-4o-mini' });
    expect(policy.trigger).toEqual(POLICY_PRESETS.opal.trigger);
  });

  it.each<[string, PolicyInput, boolean, 'detector' | 'summarizer']>([
    ['default', {}, true, 'summarizer'],
    ['unpinned system messages', { pinSystemMessages: false }, false, 'summarizer'],
    [
      'topic preset: the detector writes the summary (docs/PRESETS.md, `topic`)',
      { preset: 'topic' },
      true,
      'detector',
    ],
    [
      'topic preset with the normal summarizer (merges the previous summary)',
      { preset: 'topic', topic: { summaryFrom: 'summarizer' } },
      true,
      'summarizer',
    ],
  ])('pinning and topic.summaryFrom: %s', (_name, input, pin, summaryFrom) => {
    const policy = resolvePolicy(input);
    expect(policy.pinSystemMessages).toBe(pin);
    expect(policy.topic.summaryFrom).toBe(summaryFrom);
  });

  it('replaces arrays instead of concatenating them', () => {
    expect(resolvePolicy({ pruning: { protectedTools: ['task', 'todo'] } }).pruning.protectedTools).toEqual([
      'task',
      'todo',
    ]);
    expect(resolvePolicy({ fileTools: { read: ['cat'] } }).fileTools.read).toEqual(['cat']);
  });

  it.each<[string, PolicyInput, unknown]>([
    [
      'a field of the current kind',
      { trigger: { outputReserveCap: 8000 } },
      { kind: 'overflow', outputReserveCap: 8000 },
    ],
    ['a new kind starts from its defaults', { trigger: { kind: 'ratio' } }, TRIGGER_DEFAULTS.ratio],
    ['a new kind with its fields', { trigger: { kind: 'ratio', ratio: 0.7 } }, { kind: 'ratio', ratio: 0.7 }],
    [
      'reserve on the Opal preset',
      { preset: 'opal', trigger: { kind: 'reserve', reserveTokens: 8000 } },
      { kind: 'reserve', reserveTokens: 8000, reserveRatio: 0.25, minReserveTokens: 2048 },
    ],
    [
      'a token trigger (docs/PRESETS.md, `topic`)',
      { trigger: { kind: 'tokens', tokens: 24_000 } },
      { kind: 'tokens', tokens: 24_000 },
    ],
    [
      'the same kind on its preset',
      { preset: 'opal', trigger: { ratio: 0.9 } },
      { kind: 'ratio', ratio: 0.9 },
    ],
  ])('trigger override: %s', (_name, input, expected) => {
    expect(resolvePolicy(input).trigger).toEqual(expected);
  });

  it.each<[string, PolicyInput, RegExp]>([
    ['unknown top-level key', { compactEvery: 3 } as PolicyInput, /Unrecognized key: "compactEvery"/],
    [
      'unknown nested key',
      { pruning: { protect: 1 } } as PolicyInput,
      /Unrecognized key: "protect"[\s\S]*at pruning/,
    ],
    ['unknown preset', { preset: 'claude' } as unknown as PolicyInput, /at preset/],
    ['negative budget', { pruning: { minimumTokens: -1 } }, /at pruning\.minimumTokens/],
    ['fractional tokens', { keepRecent: { manualTokens: 1.5 } }, /at keepRecent\.manualTokens/],
    ['ratio above 1', { trigger: { kind: 'ratio', ratio: 1.5 } }, /at trigger\.ratio/],
    ['ratio of 0', { keepRecent: { autoRatio: 0 } }, /at keepRecent\.autoRatio/],
    ['confidence above 1', { topic: { minConfidence: 2 } }, /at topic\.minConfidence/],
    [
      'unknown summary source',
      { topic: { summaryFrom: 'llm' } } as unknown as PolicyInput,
      /at topic\.summaryFrom/,
    ],
    ['pinning as a string', { pinSystemMessages: 'yes' } as unknown as PolicyInput, /at pinSystemMessages/],
    ['cache horizon of 0 turns', { pruning: { cacheHorizonTurns: 0 } }, /at pruning\.cacheHorizonTurns/],
    ['fractional cache horizon', { pruning: { cacheHorizonTurns: 2.5 } }, /at pruning\.cacheHorizonTurns/],
    [
      'cache awareness as a string',
      { pruning: { cacheAware: 'auto' } } as unknown as PolicyInput,
      /at pruning\.cacheAware/,
    ],
    ['wrong type', { auto: 'yes' } as unknown as PolicyInput, /expected boolean[\s\S]*at auto/],
    ['empty instructions', { instructions: '' }, /at instructions/],
    [
      'floor above ceiling',
      { keepRecent: { minTokens: 30_000, maxTokens: 20_000 } },
      /minTokens must not exceed/,
    ],
    [
      'field of another trigger kind',
      { trigger: { ratio: 0.5 } },
      /trigger\.ratio does not apply to trigger kind "overflow"/,
    ],
  ])('rejects %s with a readable message', (_name, input, message) => {
    expect(() => resolvePolicy(input)).toThrow(PolicyError);
    expect(() => resolvePolicy(input)).toThrow(message);
  });

  it('lists every problem, with zod issues attached', () => {
    const attempt = (): unknown => resolvePolicy({ auto: 1, prune: 'no' } as unknown as PolicyInput);
    expect(attempt).toThrow(/at auto[\s\S]*at prune/);
    try {
      attempt();
    } catch (error) {
      expect(error).toBeInstanceOf(PolicyError);
      expect((error as PolicyError).name).toBe('PolicyError');
      expect((error as PolicyError).issues.map((issue) => issue.path.join('.'))).toEqual(['auto', 'prune']);
    }
  });
});

describe('PolicyInputSchema', () => {
  it('accepts a deep-partial input as is', () => {
    const input = { preset: 'klaude', keepRecent: { maxTokens: 30_000 }, trigger: { reserveRatio: 0.3 } };
    expect(PolicyInputSchema.parse(input)).toEqual(input);
  });

  it('is strict at every level', () => {
    expect(PolicyInputSchema.safeParse({ extra: true }).success).toBe(false);
    expect(PolicyInputSchema.safeParse({ summarizer: { temperature: 0 } }).success).toBe(false);
    expect(PolicyInputSchema.safeParse({ trigger: { threshold: 1 } }).success).toBe(false);
  });
});

describe('mergePolicyInputs (PATCH)', () => {
  it.each<[string, PolicyInput, PolicyInput, PolicyInput]>([
    [
      'nested objects merge',
      { pruning: { protectTokens: 1000 } },
      { pruning: { minimumTokens: 2000 } },
      { pruning: { protectTokens: 1000, minimumTokens: 2000 } },
    ],
    ['the patch wins', { preset: 'opal', auto: false }, { auto: true }, { preset: 'opal', auto: true }],
    [
      'a trigger of another kind replaces the old override',
      { trigger: { kind: 'ratio', ratio: 0.7 } },
      { trigger: { kind: 'tokens' } },
      { trigger: { kind: 'tokens' } },
    ],
    [
      'a trigger field of the same kind merges',
      { trigger: { kind: 'reserve', reserveTokens: 8000 } },
      { trigger: { reserveRatio: 0.3 } },
      { trigger: { kind: 'reserve', reserveTokens: 8000, reserveRatio: 0.3 } },
    ],
  ])('%s', (_name, base, patch, expected) => {
    expect(mergePolicyInputs(base, patch)).toEqual(expected);
    expect(() => resolvePolicy(mergePolicyInputs(base, patch))).not.toThrow();
  });
});

describe('resolveFrozenPolicy', () => {
  it('resolves as resolvePolicy does, into a policy no caller can change', () => {
    const input: PolicyInput = { preset: 'opal', pruning: { protectTokens: 12_345 } };
    const policy = resolveFrozenPolicy(input);
    expect(policy).toEqual(resolvePolicy(input));
    expect(Object.isFrozen(policy)).toBe(true);
    expect(Object.isFrozen(policy.pruning)).toBe(true);
    expect(() => {
      (policy.pruning as { protectTokens: number }).protectTokens = 1;
    }).toThrow(TypeError);
  });
});
