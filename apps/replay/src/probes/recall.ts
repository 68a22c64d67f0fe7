/**
 * Recall probe: of what a compaction's context does not hold verbatim (the goal, each constraint,
 * each stated fact and the latest request not there word for word, each file not named), how much can the agent
 * get back through the recall route? An item is **recoverable** when the ledger's listing of its
 * kind (`GET …/recall?kind=files` for files, `kind=facts` for the user's sentences: its facts and
 * the constraints the pinned section had no room for) holds it verbatim, or else when one passage
 * of a search (`GET …/recall?q=`, by its content words, the default number of passages, as an
 * agent's recall tool call gets them) holds it verbatim, whitespace collapsed: the same test as
 * present (core `holdsVerbatim`). The search uses the content words, none of the sentence's
 * punctuation, which the route's web-search syntax would read as operators.
 */
import { MAX_RECALL_QUERY_LENGTH } from '@compactor/contract';
import { holdsVerbatim, verbatimText } from '@compactor/core';
import { contentWords } from './mentions';
import type { RetentionProbes } from './retention';

export type RecalledKind = 'goal' | 'constraint' | 'fact' | 'latest' | 'file';

export interface RecalledFact {
  kind: RecalledKind;
  text: string;
  /** Recall returns it verbatim. */
  found: boolean;
  /** Which call returned it: the ledger's listing of its kind, or a search. Absent in older reports. */
  via?: 'listing' | 'search';
}

export interface RecallProbe {
  /** The items the context does not hold verbatim, each looked up once; none when it holds all. */
  facts: RecalledFact[];
}

/** What the probe needs of the recall route. */
export interface RecallApi {
  /** A search's passages, best first. */
  search(query: string): Promise<{ results: ReadonlyArray<{ excerpt: string }> }>;
  /**
   * The strings of a ledger section, whole (every page), or `null` when the route lists none (an
   * API without the ledger's `kind=`). Asked at most once per kind and probe.
   */
  listing?(kind: 'files' | 'facts'): Promise<string | null>;
}

/** The items the retention probes found not present, in their order: goal, constraints, facts, latest, files. */
export function lostFacts(retention: RetentionProbes): { kind: RecalledKind; text: string }[] {
  const missing = (fact: { where: string | null } | null) => fact !== null && fact.where !== 'verbatim';
  return [
    ...(retention.goal && missing(retention.goal)
      ? [{ kind: 'goal' as const, text: retention.goal.text }]
      : []),
    ...retention.constraints.flatMap((c) =>
      missing(c) ? [{ kind: 'constraint' as const, text: c.text }] : [],
    ),
    ...(retention.facts ?? []).flatMap((f) => (missing(f) ? [{ kind: 'fact' as const, text: f.text }] : [])),
    ...(retention.latestRequest && missing(retention.latestRequest)
      ? [{ kind: 'latest' as const, text: retention.latestRequest.text }]
      : []),
    ...retention.files.flatMap((f) => (f.named === null ? [{ kind: 'file' as const, text: f.path }] : [])),
  ];
}

/**
 * The search query for a fact: its content words (the text itself when it has none), as many
 * whole words as the longest query the route takes holds.
 */
export function recallQueryFor(text: string): string {
  const words = contentWords(text);
  if (words.length === 0) return cutToQueryLength(text);
  let query = '';
  for (const word of words) {
    const next = query === '' ? word : `${query} ${word}`;
    if (next.length > MAX_RECALL_QUERY_LENGTH) break;
    query = next;
  }
  return query === '' ? cutToQueryLength(words[0]!) : query;
}

function cutToQueryLength(text: string): string {
  if (text.length <= MAX_RECALL_QUERY_LENGTH) return text;
  const cut = text.slice(0, MAX_RECALL_QUERY_LENGTH);
  // A surrogate pair split at the cut would leave a lone surrogate, which the route refuses.
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** Whether one of the passages holds `text` verbatim (whitespace collapsed). */
export function foundIn(excerpts: readonly string[], text: string): boolean {
  return excerpts.some((excerpt) => holdsVerbatim(verbatimText([excerpt]), text));
}

/** Looks each item the context lacks up through recall and says whether recall returns it. */
export async function probeRecall(api: RecallApi, retention: RetentionProbes): Promise<RecallProbe> {
  const listings = new Map<'files' | 'facts', Promise<string | null>>();
  const listed = async (kind: RecalledKind, text: string): Promise<boolean> => {
    if (!api.listing) return false;
    const section = kind === 'file' ? 'files' : 'facts';
    if (!listings.has(section)) listings.set(section, api.listing(section));
    const listing = await listings.get(section)!;
    return listing !== null && holdsVerbatim(verbatimText([listing]), text);
  };
  const facts: RecalledFact[] = [];
  for (const fact of lostFacts(retention)) {
    if (await listed(fact.kind, fact.text)) {
      facts.push({ ...fact, found: true, via: 'listing' });
      continue;
    }
    const { results } = await api.search(recallQueryFor(fact.text));
    const found = foundIn(
      results.map((r) => r.excerpt),
      fact.text,
    );
    facts.push({ ...fact, found, ...(found ? { via: 'search' as const } : {}) });
  }
  return { facts };
}
