/**
 * The constraint sentences a user stated ("Never run the migration against production."), found
 * deterministically so a summary can be checked for them. Losing one is the failure users of
 * every compacting agent report most, so the matcher prefers a false positive (an extra pinned
 * sentence costs a line) to a miss, within the rules below.
 *
 * Sentences: fenced code (``` or ~~~) is skipped (pasted code and logs are not the user's words);
 * every other line is split after `.`, `!` or `?` followed by whitespace, except after the usual
 * abbreviations (e.g., i.e., etc., vs., cf.); list markers (`-`, `*`, `1.`, `>`) are dropped.
 *
 * A sentence is a constraint, ignoring case and curly apostrophes, when it has at least two words,
 * is not a plain question, and
 * - says `must`, `mustn't` or `make sure` anywhere ("The export must stream"), or
 * - says `never`, `always`, `do not` or `don't` as an imperative: at the start of a clause
 *   (sentence start, or after `,` `;` `:` `(` or a dash, optionally after and / but / also / so /
 *   then / just / please), or after you / we / please (optionally with should / will / must /
 *   need to / have to / want to / to): "Never run …", "If it fails, don't retry", "we always
 *   squash", "I want you to never …" — but not "It always fails on CI" or "I don't know why", or
 * - says `only` as an imperative: at the start of a clause before one of the verbs of
 *   {@link ONLY_VERBS} ("Only change files under src/"), right after one of them at the start of a
 *   clause ("Use only the standard library", "touch only X"), or after you / we / please as above
 *   ("you should only edit the tests") — but not "It only fails on CI" or "I only saw it once".
 *   An "only" sentence has no other word that marks it as an order, so the verb that opens it
 *   must be one an instruction to a coding agent opens with: a short list, not every verb.
 * A question is kept only as a polite request ("Can you make sure the tests pass?").
 */

/** Words that make any sentence a constraint, wherever they stand. */
const ANYWHERE = /\b(?:must|mustn't|make sure)\b/i;

const IMPERATIVE_WORD = String.raw`(?:never(?!\s+mind\b)|always|do\s+not|don't|dont)\b`;
const CLAUSE_LEAD = String.raw`(?:(?:and|but|also|so|then|just|please)\s+)*`;
/** The imperative words at the start of a clause. */
const AT_CLAUSE_START = new RegExp(
  String.raw`(?:^|[,;:(]\s*|\s[-–—]\s+)["']?${CLAUSE_LEAD}${IMPERATIVE_WORD}`,
  'i',
);
/** The imperative words addressed to the assistant or stating a team rule. */
const AFTER_ADDRESSEE = new RegExp(
  String.raw`\b(?:you|we|please)\s+(?:(?:should|will|must|need\s+to|have\s+to|want\s+to|to)\s+)?${IMPERATIVE_WORD}`,
  'i',
);
/** Verbs an "only" instruction opens with ("Only change …", "use only …"). */
const ONLY_VERBS = String.raw`(?:use|change|touch|edit|modify|update|write|read|run|test|import|add|fix|commit|push|deploy|install|return|call|target|support|depend|rely|log|print|output|reply|respond|answer|refactor|rename|delete|remove|create|work|make|keep|ask|send|show|include|stage|query|fetch|build|mock)`;
/** What follows "<verb> only" in a statement about a thing ("Build only fails on CI"). */
const STATEMENT_VERB = String.raw`(?:fails?|failed|happens?|happened|works?|worked|runs?|ran|breaks?|broke|occurs?|occurred|seems?|appears?|passes|passed|crashes|crashed|times?\s+out|hangs?|hung)\b`;
/** "only" as an imperative: before or after an instruction verb at a clause start, or addressed. */
const ONLY_IMPERATIVE = [
  new RegExp(String.raw`(?:^|[,;:(]\s*|\s[-–—]\s+)["']?${CLAUSE_LEAD}only\s+${ONLY_VERBS}\b`, 'i'),
  new RegExp(
    String.raw`(?:^|[,;:(]\s*|\s[-–—]\s+)["']?${CLAUSE_LEAD}${ONLY_VERBS}\s+only\b(?!\s+${STATEMENT_VERB})`,
    'i',
  ),
  new RegExp(
    String.raw`\b(?:you|we|please)\s+(?:(?:should|will|must|need\s+to|have\s+to|want\s+to|to|can)\s+)?only\b`,
    'i',
  ),
];

/** A question that is really a request. */
const POLITE_REQUEST = /^(?:please\s+)?(?:can|could|would|will)\s+you\b/i;

const ABBREVIATION_END = /\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp)\.$/i;
const LIST_MARKER = /^\s*(?:[-*+•]|\d{1,3}[.)]|>+)\s+/;
const FENCE = /^\s*(?:```|~~~)/;

/** The sentences of a user's text, in order (see the module comment for the rules). */
export function splitSentences(text: string): string[] {
  const sentences: string[] = [];
  let inFence = false;
  for (const rawLine of text.split(/\r?\n/)) {
    if (FENCE.test(rawLine)) {
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const line = rawLine.replace(LIST_MARKER, '').trim();
    if (line === '') continue;
    let current = '';
    for (const piece of line.split(/(?<=[.!?])\s+/)) {
      current = current === '' ? piece : `${current} ${piece}`;
      // The piece, not the sentence so far: a run of "etc. etc. …" must not be scanned again
      // for every piece (the abbreviation ends the piece either way).
      if (!ABBREVIATION_END.test(piece)) {
        sentences.push(current);
        current = '';
      }
    }
    if (current !== '') sentences.push(current);
  }
  return sentences;
}

/** Whether one sentence states a constraint (see the module comment for the rules). */
export function isConstraintSentence(sentence: string): boolean {
  const text = sentence.replace(/[’‘]/g, "'").trim();
  // At least two words: trimmed, the text has whitespace inside (no array of its words made).
  if (!/\s/.test(text)) return false;
  if (text.endsWith('?') && !POLITE_REQUEST.test(text)) return false;
  return (
    ANYWHERE.test(text) ||
    AT_CLAUSE_START.test(text) ||
    AFTER_ADDRESSEE.test(text) ||
    ONLY_IMPERATIVE.some((pattern) => pattern.test(text))
  );
}

/** The constraint sentences of one user message's text, in order, as written. */
export function constraintSentences(text: string): string[] {
  return splitSentences(text).filter(isConstraintSentence);
}
