/**
 * Is a provider error a context overflow (the prompt does not fit), so that an emergency
 * compaction and a retry can fix it?
 *
 * The references match substrings: Opal's 17 strings, klaude-code's and pi's patterns, bare
 * `400`/`413` "(no body)". Some of those are far too broad: `max_tokens` matches parameter
 * errors, `too many tokens` matches Bedrock throttling, `request too large` matches OpenAI's
 * tokens-per-minute limit when other requests used it up. Compacting on those throws history
 * away and does not help, so this classifier decides in these steps:
 *
 * 1. one request larger than its limit ("Limit 6000, Requested 7000": Groq's and OpenAI's
 *    tokens-per-minute answer to a single oversized prompt) is an overflow, whatever the status:
 *    it can never pass without shrinking, while a rate limit's request fits its limit and passes
 *    later;
 * 2. status 429 (a rate limit) and 401/403, and any text about authentication or content policy,
 *    are never overflows: compaction does not fix them;
 * 3. explicit overflow wordings (the input or context is too long) win over the rest of the
 *    text: "prompt is too long … see the rate limits docs" is an overflow;
 * 4. rate limits and quotas in the text are not;
 * 5. an error about the output budget (`max_tokens`, completion tokens) without such a wording is
 *    a parameter error, not an overflow;
 * 6. the reference systems' broad wordings, then a bare 400/413 without a body, and any 413.
 */

/** What a provider said: the SDK's error message, the HTTP status and the raw response body. */
export interface ProviderErrorReport {
  message?: string | null;
  status?: number | null;
  body?: string | null;
}

/** The verdict. `matched` names the overflow wording found; `excludedBy` the exclusion that won. */
export interface OverflowDetection {
  overflow: boolean;
  matched: string | null;
  excludedBy: string | null;
}

interface Wording {
  label: string;
  pattern: RegExp;
  /** The wording does not count when this also matches. */
  unless?: RegExp;
}

/** Errors that are never overflows, whatever else their text contains. */
const HARD_EXCLUSIONS: readonly Wording[] = [
  {
    label: 'authentication',
    pattern: /api[ _-]?key|authenticat|unauthori[sz]ed|permission denied|access denied|forbidden/,
  },
  {
    label: 'content policy',
    pattern:
      /content[ _]management[ _]policy|content[ _-]?filter|content[ _]policy|safety system|responsibleai|responsible ai|flagged|moderation/,
  },
];

/** Limits that pass with time or money: not overflows unless the text says the prompt is too long. */
const RATE_EXCLUSIONS: readonly Wording[] = [
  {
    label: 'rate limit',
    pattern:
      /rate[ _-]?limit|too many requests|tokens per min|requests per min|per-minute|\(tpm\)|throttl|please wait before trying again|resource[ _]exhausted|resource has been exhausted/,
  },
  { label: 'quota or billing', pattern: /quota|billing|credit balance|out of credits|spend limit/ },
];

/** Wordings that say the prompt (input, context) is too long. */
const EXPLICIT_OVERFLOW: readonly Wording[] = [
  { label: 'context_length_exceeded', pattern: /context[_ ]length[_ ]exceeded/ },
  {
    label: 'context window exceeded',
    pattern: /context[_ ]?window[_ ]?exceeded|context window exceeds limit/,
  },
  { label: 'maximum context length', pattern: /maximum context length/ },
  { label: 'prompt is too long', pattern: /prompt is too long|prompt too long/ },
  { label: 'input too long', pattern: /input (?:is )?too long/ },
  {
    label: 'exceeds the context window',
    pattern:
      /exceed(?:s|ed)?(?: the)?(?: model'?s)?(?: available| maximum)? context[ _](?:window|length|limit|size)/,
  },
  { label: 'input token count exceeds', pattern: /input token count.*exceeds the maximum/ },
  { label: 'input length exceeds', pattern: /input length.{0,40}exceeds/ },
  { label: 'maximum prompt length', pattern: /maximum prompt length/ },
  { label: 'prompt token count exceeds the limit', pattern: /prompt token count of \d+ exceeds the limit/ },
  { label: 'prompt_tokens_exceeded', pattern: /prompt_tokens_exceeded/ },
  {
    label: 'longer than the context length',
    pattern:
      /(?:greater|longer) than the (?:model'?s )?context length|longer than the maximum model length|but the configured context size is/,
  },
  { label: 'context length of only', pattern: /context length of only \d+ tokens/ },
  { label: 'exceeded model token limit', pattern: /exceeded model token limit/ },
  { label: 'range of input length', pattern: /range of input length should be/ },
  { label: 'prompt exceeds max length', pattern: /prompt exceeds max(?:imum)? length/ },
  {
    label: 'inputs tokens + max_new_tokens',
    pattern: /inputs`? tokens \+ `?max_new_tokens|inputs`? must have less than/,
  },
  { label: 'content_too_large', pattern: /content_too_large/ },
  // OpenAI's per-string cap counts only for conversation content, not for e.g. `prompt_cache_key`.
  { label: 'string_above_max_length', pattern: /(?:messages|input)\[\d+\][^\n]{0,40}string too long/ },
  { label: 'no body', pattern: /^4(?:00|13)\s*(?:status code)?\s*\(no body\)/ },
];

/** An error about the requested output budget (a parameter error unless step 2 matched). */
const OUTPUT_BUDGET: Wording = {
  label: 'output token parameter',
  pattern:
    /max_tokens|max_completion_tokens|max_output_tokens|maxoutputtokens|max_new_tokens|output tokens|completion tokens|output token limit/,
};

/** The references' broad wordings, only trusted once the exclusions above did not fire. */
const BROAD_OVERFLOW: readonly Wording[] = [
  {
    label: 'request too large',
    pattern:
      /request too large|request_too_large|request entity too large|payload too large|request exceeds the maximum size/,
  },
  { label: 'too many tokens', pattern: /too many tokens/ },
  { label: 'token limit', pattern: /token limit/ },
  { label: 'exceeds the limit', pattern: /exceeds? the limit/ },
  { label: 'reduce the length', pattern: /reduce the length/ },
  { label: 'maximum number of tokens', pattern: /maximum number of tokens/ },
  { label: "exceeds the model's maximum", pattern: /exceeds the model'?s maximum/ },
  { label: 'context window', pattern: /context[ _]window/ },
  { label: 'max_prompt_tokens', pattern: /max_prompt_tokens/ },
  // A per-string cap on a request parameter (not the conversation) is a client bug.
  {
    label: 'string_above_max_length',
    pattern: /string_above_max_length/,
    unless: /prompt_cache_key|safety_identifier|"param":\s*"(?:user|metadata|model|tools|instructions)/,
  },
];

/** "Limit 6000, Requested 7000": the request alone is over a limit, `used` tokens aside. */
const LIMIT_AND_REQUESTED = /limit:? ?(\d+)[^\n]{0,40}?requested:? ?(\d+)/;

/**
 * Whether the text reports one request larger than its limit (Groq's "Request too large … on
 * tokens per minute (TPM): Limit 6000, Requested 7000"). A rate limit reports the same fields
 * with a request that fits ("Limit 30000, Used 29500, Requested 800"): not this.
 */
function requestsMoreThanItsLimit(text: string): boolean {
  const found = LIMIT_AND_REQUESTED.exec(text);
  return found !== null && Number(found[2]) > Number(found[1]);
}

function firstMatch(wordings: readonly Wording[], text: string): string | null {
  for (const wording of wordings) {
    if (wording.pattern.test(text) && !wording.unless?.test(text)) return wording.label;
  }
  return null;
}

const notOverflow = (excludedBy: string | null): OverflowDetection => ({
  overflow: false,
  matched: null,
  excludedBy,
});
const overflow = (matched: string): OverflowDetection => ({ overflow: true, matched, excludedBy: null });

/**
 * Classify a provider error. Pure and cheap: lower-cases the message and body once and tests a
 * fixed list of patterns. See the module comment for the order of the rules.
 */
export function detectOverflowError(report: ProviderErrorReport): OverflowDetection {
  const status = report.status ?? null;
  const message = (report.message ?? '').trim().toLowerCase();
  const body = (report.body ?? '').trim().toLowerCase();
  const text = body === '' ? message : `${message}\n${body}`;

  if (requestsMoreThanItsLimit(text)) return overflow('requested more than the limit');
  if (status === 429) return notOverflow('status 429');
  if (status === 401 || status === 403) return notOverflow(`status ${status}`);
  const hard = firstMatch(HARD_EXCLUSIONS, text);
  if (hard !== null) return notOverflow(hard);
  const explicit = firstMatch(EXPLICIT_OVERFLOW, message) ?? firstMatch(EXPLICIT_OVERFLOW, text);
  if (explicit !== null) return overflow(explicit);
  const limited = firstMatch(RATE_EXCLUSIONS, text);
  if (limited !== null) return notOverflow(limited);

  if (OUTPUT_BUDGET.pattern.test(text)) return notOverflow(OUTPUT_BUDGET.label);
  const broad = firstMatch(BROAD_OVERFLOW, text);
  if (broad !== null) return overflow(broad);

  // klaude-code / pi: Cerebras answers an oversized prompt with a bare 400 or 413 and no body.
  const bare =
    body === '' && (message === '' || /\(no body\)|^bad request$|^payload too large$/.test(message));
  if ((status === 400 || status === 413) && bare) return overflow(`status ${status} (no body)`);
  // 413 Payload Too Large always means the request is too big; the exclusions above still apply.
  if (status === 413) return overflow('status 413');
  return notOverflow(null);
}
