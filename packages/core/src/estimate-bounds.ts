/**
 * How far a usage report may move the context estimate from Compactor's own counts. Every stored
 * part is counted exactly, so the stored count is a floor no report goes below; a report may add
 * what the provider saw and the store does not hold, up to a bounded share of the usable input.
 */

/**
 * A usage report may raise the estimate above the stored count by at most this share of the
 * usable input. What a provider sees and Compactor does not store (tool schemas, a system prompt
 * the client keeps to itself, the provider's framing of messages and images) is real, and a
 * report is how it gets counted; a quarter of the input is room for all of it with any real
 * agent, and bounds what a wrong report can do to the trigger and the served context.
 */
export const USAGE_CALIBRATION_MAX_SHARE = 0.25;

/**
 * The most a usage report may add over the stored count: `floor(usable ×` {@link
 * USAGE_CALIBRATION_MAX_SHARE}`)`. An unlimited window (usable `null`) or no room at all gives 0:
 * there is no input to take a share of, so the estimate is the stored count.
 */
export function usageCalibrationCap(usable: number | null): number {
  return usable !== null && usable > 0 ? Math.floor(usable * USAGE_CALIBRATION_MAX_SHARE) : 0;
}

/**
 * A report-based estimate held to what the store knows: `clamp(reported, stored, stored + cap)`.
 * Every stored part is counted exactly, so a context is never smaller than their sum, whatever a
 * report says (a zero, a made-up small number, a report measured before a large append); a
 * report may only add, up to `cap` ({@link usageCalibrationCap}), what the provider saw besides.
 */
export function boundedEstimate(reported: number, stored: number, cap: number): number {
  return Math.min(Math.max(reported, stored), stored + Math.max(0, cap));
}
