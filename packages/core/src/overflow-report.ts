import type { Finish, ModelInfo, Usage } from './model';
import { detectOverflowError } from './overflow-errors';
import { detectUsageOverflow } from './triggers';

/** What a client reports after a failed or suspicious turn (`POST /v1/sessions/:id/overflow`). */
export interface OverflowReport {
  error?: string | null | undefined;
  status?: number | null | undefined;
  body?: string | null | undefined;
  usage?: Usage | null | undefined;
  finish?: Finish | null | undefined;
}

/** What a report shows: `kind` null when it is no overflow, `matched` what gave it away. */
export interface OverflowVerdict {
  kind: 'error' | 'usage' | null;
  matched: string | null;
}

/** The verdict on a report: a provider overflow error first, then a silent usage overflow. */
export function classifyOverflow(report: OverflowReport, model: ModelInfo): OverflowVerdict {
  if (report.error != null || report.status != null || report.body != null) {
    const detection = detectOverflowError({
      message: report.error ?? null,
      status: report.status ?? null,
      body: report.body ?? null,
    });
    if (detection.overflow) return { kind: 'error', matched: detection.matched };
  }
  if (report.usage && detectUsageOverflow(report.usage, model, report.finish ?? null)) {
    return { kind: 'usage', matched: 'reported prompt larger than the context window' };
  }
  return { kind: null, matched: null };
}
