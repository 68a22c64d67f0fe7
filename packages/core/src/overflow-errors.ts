/**
 * Is a provider error a context overflow (the prompt does not fit), so that an emergency
 * compaction and a retry can fix it?
 *
 * The references match substrings: Opal's 17 strings, klaude-code's and pi's patterns, bare
 * `400`/`413` "(no body)". Some of those are far too broad: `max_tokens` matches parameter
 * errors, `too many tokens` matches Bedrock throttling, `request too large` matches OpenAI's
 * tokens-per-minute limit. Compacting on those throws history away and does not help, so this
 * classifier decides in four steps:
 *
 * 1. exclusions: rate limits and quotas (and status 429), authentication (401/403), content
 *    policy, whatever else the text says;
 * 2. explicit overflow wordings (the input or context is too long) win;
 * 3. an error about the output budget (`max_tokens`, completion tokens) without such a wording is
 *    a parameter error, not an overflow;
 * 4. the reference systems' broad wordings, then a bare 400/413 without a body, and any 413.
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
const EXCLUSIONS: readonly Wording[] = [
  {
    label: 'rate limit',
    pattern:
      /rate[ _-]?limit|too many requests|tokens per min|requests per min|per-minute|\(tpm\)|throttl|please wait before trying again|resource[ _]exhausted|resource has been exhausted/,
  },
  { label: 'quota or billing', pattern: /quota|billing|credit balance|out of credits|spend limit/ },
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

  if (status === 429) return notOverflow('status 429');
  if (status === 401 || status === 403) return notOverflow(`status ${status}`);
  const excluded = firstMatch(EXCLUSIONS, text);
  if (excluded !== null) return notOverflow(excluded);

  const explicit = firstMatch(EXPLICIT_OVERFLOW, message) ?? firstMatch(EXPLICIT_OVERFLOW, text);
  if (explicit !== null) return overflow(explicit);
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
