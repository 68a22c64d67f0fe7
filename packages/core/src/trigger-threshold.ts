/**
 * Where a session's window ends and where each trigger fires: the output reserve, the usable
 * input, the four threshold kinds (policy `trigger`: OpenCode's overflow against the usable input,
 * Opal's 80 % of the window, klaude-code's reserve, the topic reference's fixed token count) and
 * the two overflow checks on a usage report.
 */
import type { Finish, ModelInfo, Usage } from './model';
import { assertNever } from './model';
import { TRIGGER_DEFAULTS, type Policy, type Trigger } from './policy';
import { promptTokens, reportedContextTokens } from './tokens';

/**
 * The output reserve never takes more than this share of the window. OpenCode reserves
 * `min(maxOutput, 32000)`, which is the whole window for a model whose output limit equals its
 * window (gpt-4: 8192 / 8192): usable 0, and every append would compact.
 */
export const OUTPUT_RESERVE_MAX_SHARE = 0.25;

/**
 * Tokens kept free for the answer: `min(maxOutput || cap, cap, floor(window / 4))`. OpenCode's
 * `min(maxOutput, cap) || cap` (a model that declares no output limit, 0, still reserves the
 * cap), bounded by {@link OUTPUT_RESERVE_MAX_SHARE} of the window so the prompt always keeps
 * three quarters of it. Sane models keep OpenCode's numbers (gpt-4o: 16,384; Claude: 32,000).
 */
export function outputReserve(
  model: ModelInfo,
  cap: number = TRIGGER_DEFAULTS.overflow.outputReserveCap,
): number {
  const declared = model.maxOutputTokens || cap;
  return Math.max(
    0,
    Math.min(declared, cap, Math.floor(Math.max(0, model.contextWindow) * OUTPUT_RESERVE_MAX_SHARE)),
  );
}

/**
 * How many prompt tokens the model accepts (OpenCode): its input limit when it has one, else the
 * window minus the {@link outputReserve} — minus klaude-code's own reserve with the `reserve`
 * trigger, whose point this then is. `null` for an unlimited window (0), which never
 * overflows. Callers treat a result `<= 0` (only possible from a bad input limit) as "no room":
 * nothing fires on it.
 */
export function usableTokens(model: ModelInfo, policy: Pick<Policy, 'trigger'>): number | null {
  if (model.contextWindow <= 0) return null;
  if (model.inputLimit) return model.inputLimit;
  // klaude-code keeps its reserve free for the answer: its prompt may take the rest.
  if (policy.trigger.kind === 'reserve')
    return Math.max(0, model.contextWindow - reserveTokens(policy.trigger, model.contextWindow));
  const cap =
    policy.trigger.kind === 'overflow'
      ? policy.trigger.outputReserveCap
      : TRIGGER_DEFAULTS.overflow.outputReserveCap;
  return Math.max(0, model.contextWindow - outputReserve(model, cap));
}

/** klaude-code's reserve: `min(reserveTokens, max(minReserveTokens, floor(reserveRatio × window)))`. */
export function reserveTokens(trigger: Extract<Trigger, { kind: 'reserve' }>, contextWindow: number): number {
  const proportional = Math.max(trigger.minReserveTokens, Math.floor(contextWindow * trigger.reserveRatio));
  return Math.min(trigger.reserveTokens, proportional);
}

/** The point at which a trigger fires: above `tokens`, or at it too when `inclusive`. */
export interface Threshold {
  tokens: number;
  inclusive: boolean;
}

/**
 * The trigger's threshold for this model, or `null` when it can never fire: an unlimited window,
 * or a window-based threshold of 0 or less (a window smaller than klaude-code's 2048 reserve
 * floor, a bad input limit), which would otherwise fire on every append. The fixed `tokens`
 * trigger needs no window and always fires.
 */
export function compactionThreshold(model: ModelInfo, policy: Pick<Policy, 'trigger'>): Threshold | null {
  const trigger = policy.trigger;
  if (trigger.kind === 'tokens') return { tokens: trigger.tokens, inclusive: false };
  if (model.contextWindow <= 0) return null;
  let threshold: Threshold;
  switch (trigger.kind) {
    case 'overflow':
      threshold = { tokens: usableTokens(model, policy) ?? 0, inclusive: false };
      break;
    case 'ratio':
      threshold = { tokens: trigger.ratio * model.contextWindow, inclusive: true };
      break;
    case 'reserve':
      threshold = {
        tokens: model.contextWindow - reserveTokens(trigger, model.contextWindow),
        inclusive: false,
      };
      break;
    default:
      return assertNever(trigger, 'trigger');
  }
  return threshold.tokens > 0 ? threshold : null;
}

/** Whether `tokens` crosses `threshold`. */
export function crossesThreshold(tokens: number, threshold: Threshold): boolean {
  return threshold.inclusive ? tokens >= threshold.tokens : tokens > threshold.tokens;
}

/**
 * OpenCode's `isOverflow` on one usage report: `input + cache.read + output > usable`, never when
 * `auto` is off, the window is unlimited or there is no usable room. `output` is taken without
 * its reasoning (model.ts `Usage`; OpenCode stores reasoning apart from output). The hybrid
 * estimate also counts cache writes.
 */
export function isOverflow(
  usage: Usage,
  model: ModelInfo,
  policy: Pick<Policy, 'auto' | 'trigger'>,
): boolean {
  if (!policy.auto) return false;
  const usable = usableTokens(model, policy);
  if (usable === null || usable <= 0) return false;
  return reportedContextTokens(usage) - usage.cacheWrite > usable;
}

/**
 * A silent overflow: the provider answered but the prompt it reports is larger than the window
 * (Opal `usage_overflow?`: reported input > window), or it stopped for length with no output and
 * a full window (pi: a server that truncated the prompt to fit). Unlimited windows never overflow.
 */
export function detectUsageOverflow(usage: Usage, model: ModelInfo, finish: Finish | null = null): boolean {
  if (model.contextWindow <= 0) return false;
  const prompt = promptTokens(usage);
  if (prompt > model.contextWindow) return true;
  return finish === 'length' && usage.output === 0 && prompt >= model.contextWindow * 0.99;
}
