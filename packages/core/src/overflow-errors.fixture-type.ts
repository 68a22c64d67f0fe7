/**
 * The shape of the provider-error fixtures (overflow-errors.fixtures.ts and
 * overflow-errors.not-overflow.fixtures.ts), apart from both so neither imports the other's
 * types back (scripts/check-import-cycles.ts).
 */
import type { ProviderErrorReport } from './overflow-errors';

export interface OverflowFixture {
  /** Provider and situation, unique: used as the test name. */
  name: string;
  /** Where the wording was seen. */
  source: string;
  report: ProviderErrorReport;
}
