import type { StubMessage } from './conversation';
import { readSummaryRequest } from './summary-writer';

/**
 * The `drop-everything` output: a summary that looks right (every heading of the requested
 * format, no sign of a confused model) and carries no fact of the conversation — no goal, no
 * constraint, no file, no request. What users report after a compaction ("it forgot what I told
 * it"), made deterministic so tests can show core's check pins the facts back.
 */
const EMPTY_HISTORY_SUMMARY = [
  '## Goal',
  'Continue the current task.',
  '',
  '## Constraints & Preferences',
  '- (none)',
  '',
  '## Progress',
  '### Done',
  '- [x] Reviewed the earlier conversation',
  '',
  '### In Progress',
  '- [ ] Continuing the work discussed earlier',
  '',
  '### Blocked',
  '- (none)',
  '',
  '## Key Decisions',
  '- (none)',
  '',
  '## Next Steps',
  '1. Pick up where the conversation left off',
  '',
  '## Critical Context',
  '- (none)',
].join('\n');

const EMPTY_TURN_PREFIX_SUMMARY = [
  '## Original Request',
  'Continue the current task.',
  '',
  '## Attempted So Far',
  '- Worked on the task',
  '',
  '## Intermediate Results',
  '- (none)',
].join('\n');

/** The empty-of-facts summary for a summarization request; `null` for any other request. */
export function emptyOfFactsSummary(messages: readonly StubMessage[]): string | null {
  const prompt = messages.map((message) => message.text).join('\n\n');
  const summaryRequest = readSummaryRequest(prompt);
  if (summaryRequest === null) return null;
  return summaryRequest.turnPrefix ? EMPTY_TURN_PREFIX_SUMMARY : EMPTY_HISTORY_SUMMARY;
}
