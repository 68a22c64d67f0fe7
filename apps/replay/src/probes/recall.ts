/**
 * Recall probe: of what a compaction lost (the goal and each constraint the retention probes
 * found in neither the summary nor the kept window), how much does the recall route find again?
 * Each lost fact is searched for by its content words (`GET …/recall?q=`, the default number of
 * passages, as an agent's recall tool call gets them): the words a model would search with, none
 * of the sentence's punctuation, which the route's web-search syntax would read as operators (a
 * list item's leading "- " excludes the word after it). A fact counts as found when one passage
 * says it as the kept window must (all of its content words, or the sentence itself).
 */
import { MAX_RECALL_QUERY_LENGTH } from '@compactor/contract';
import { contentWords, haystack, mentions } from './mentions';
import type { RetentionProbes } from './retention';

export interface RecalledFact {
  kind: 'goal' | 'constraint';
  text: string;
  /** A passage the search returned says it. */
  found: boolean;
}

export interface RecallProbe {
  /** The facts the context lost, each searched for once; none when it lost none. */
  facts: RecalledFact[];
}

/** What the probe needs of the recall route: a search's passages, best first. */
export type RecallSearchFn = (query: string) => Promise<{ results: ReadonlyArray<{ excerpt: string }> }>;

/** The goal and constraints the retention probes found nowhere in the context, in their order. */
export function lostFacts(retention: RetentionProbes): { kind: RecalledFact['kind']; text: string }[] {
  return [
    ...(retention.goal && retention.goal.where === null
      ? [{ kind: 'goal' as const, text: retention.goal.text }]
      : []),
    ...retention.constraints.flatMap((c) =>
      c.where === null ? [{ kind: 'constraint' as const, text: c.text }] : [],
    ),
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

/** Whether one of the passages says `text` (all its content words, as the kept-window check asks). */
export function foundIn(excerpts: readonly string[], text: string): boolean {
  return excerpts.some((excerpt) => mentions(haystack(excerpt), text, { coverage: 1 }));
}

/** Searches for each fact the context lost and says whether the search found it. */
export async function probeRecall(search: RecallSearchFn, retention: RetentionProbes): Promise<RecallProbe> {
  const facts: RecalledFact[] = [];
  for (const fact of lostFacts(retention)) {
    const { results } = await search(recallQueryFor(fact.text));
    facts.push({
      ...fact,
      found: foundIn(
        results.map((r) => r.excerpt),
        fact.text,
      ),
    });
  }
  return { facts };
}
