/**
 * One transcript through the live system at one window: appended a message at a time (no usage
 * sent, so the API's own estimate triggers compactions), each compaction waited for, and right
 * after each completed one the context served (`GET …/context?format=openai`) is measured against
 * the transcript up to that point, the items it lacks looked up through recall; the baselines'
 * contexts are built from the same prefix and the same summary text and measured beside it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CompactorClient } from '@compactor/client';
import {
  chatMessageText,
  DEFAULT_POLICY,
  latestRequestMaxChars,
  LEDGER_HEADING,
  PINNED_CLOSE,
  PINNED_OPEN,
  stripFileOpsBlocks,
  SUMMARY_MAX_USABLE_SHARE,
  toolInputStrings,
} from '@compactor/core';
import { recallQueryFor } from '../../apps/replay/src/probes/recall';
import { maxOutputFor } from '../../apps/replay/src/runner/replay-run';
import type { Transcript } from '../../apps/replay/src/transcript';
import { BASELINES, baselineContext, type Baseline } from './baselines';
import { survivalItems, type SurvivalClass } from './items';
import {
  addCounts,
  collapseWhitespace,
  contextText,
  countSurvival,
  emptyCounts,
  isPresent,
  type SurvivalCounts,
} from './measure';

export interface Api {
  client: CompactorClient;
  apiUrl: string;
  apiKey: string;
}

export interface DriveResult {
  /** Completed compactions measured (all of them, when there were enough). */
  compactions: number;
  compactor: SurvivalCounts;
  baselines: Record<Baseline, SurvivalCounts>;
  /** Whether the recall route answered `?kind=` (the ledger's listings). */
  kindRecall: boolean;
  /**
   * Latest-request checks whose request is longer than the pinned section shows whole (core
   * `latestRequestMaxChars`): beyond it the section shows head and tail, which counts as missing.
   */
  latestBeyondAllowance: number;
}

/**
 * `BENCH_SURVIVAL_MISSES=1` prints each latest request and modified file the context lacks, and
 * each command neither the context nor recall has.
 */
const MISSES = process.env.BENCH_SURVIVAL_MISSES === '1';

const TERMINAL = new Set(['completed', 'failed', 'skipped']);
const POLL_MS = 25;

/** The summarizer's own words: the summary without the blocks Compactor itself adds to it. */
export function summarizerText(summary: string): string {
  let text = stripFileOpsBlocks(summary);
  const pinned = text.indexOf(PINNED_OPEN);
  if (pinned !== -1) {
    const end = text.indexOf(PINNED_CLOSE, pinned);
    text = text.slice(0, pinned) + (end === -1 ? '' : text.slice(end + PINNED_CLOSE.length));
  }
  const ledger = text.indexOf(LEDGER_HEADING);
  return (ledger === -1 ? text : text.slice(0, ledger)).trim();
}

const KIND_OF: Partial<Record<SurvivalClass, string>> = {
  files: 'files',
  commands: 'commands',
  facts: 'facts',
  constraints: 'facts',
};

async function waitEnded(client: CompactorClient, id: string): Promise<string> {
  for (;;) {
    const { status } = await client.getCompaction(id);
    if (TERMINAL.has(status)) return status;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export async function driveTranscript(
  api: Api,
  transcript: Transcript,
  window: number,
  sessionId: string,
): Promise<DriveResult> {
  const { client } = api;
  const created = await client.createSession({
    id: sessionId,
    model: {
      id: 'stub-summarizer',
      provider: 'openai',
      contextWindow: window,
      maxOutputTokens: maxOutputFor(window),
    },
  });
  const usable = created.status.usable!;
  const result: DriveResult = {
    compactions: 0,
    compactor: emptyCounts(),
    baselines: Object.fromEntries(BASELINES.map((b) => [b, emptyCounts()])) as Record<
      Baseline,
      SurvivalCounts
    >,
    kindRecall: false,
    latestBeyondAllowance: 0,
  };
  // The session runs the default policy: its summary budget bounds the latest request's allowance.
  const allowance = latestRequestMaxChars(
    Math.min(DEFAULT_POLICY.summarizer.maxOutputTokens, Math.floor(usable * SUMMARY_MAX_USABLE_SHARE)),
  );
  const kindListing = await kindRecall(api, sessionId);
  result.kindRecall = kindListing !== null;

  const measure = async (appended: number) => {
    const prefix = transcript.messages.slice(0, appended);
    const items = survivalItems(prefix);
    result.latestBeyondAllowance += items.latest.filter(
      (l) => collapseWhitespace(l).length > allowance,
    ).length;
    const [openai, native] = await Promise.all([
      client.getContext(sessionId, { format: 'openai' }),
      client.getContext(sessionId),
    ]);
    const served = contextText(
      (openai.messages as Parameters<typeof chatMessageText>[0][]).map(chatMessageText),
    );
    const listings = new Map<string, string>();
    const recall = async (kind: SurvivalClass, item: string): Promise<boolean> => {
      const listingKind = KIND_OF[kind];
      if (kindListing && listingKind) {
        if (!listings.has(listingKind)) listings.set(listingKind, (await kindListing(listingKind)) ?? '');
        if (isPresent(contextText([listings.get(listingKind)!]), item)) return true;
      }
      const found = await client.recall(sessionId, { q: recallQueryFor(item) });
      return found.results.some((r) => isPresent(contextText([r.excerpt]), item));
    };
    const misses: string[] = [];
    const onMissing = MISSES
      ? (key: string, item: string, recoverable: boolean) => {
          if (key === 'latest' || key === 'modifiedFiles' || (key === 'commands' && !recoverable))
            misses.push(`${key} (${item.length} chars): ${item.slice(0, 100).replace(/\s+/g, ' ')}`);
        }
      : undefined;
    addCounts(result.compactor, await countSurvival(items, served, recall, onMissing));
    if (misses.length > 0) {
      const ledgerAt = served.text.indexOf(LEDGER_HEADING);
      const overflow = /Not listed for space:[^.]*\./.exec(served.text)?.[0] ?? 'nothing unlisted';
      console.log(
        `[miss] ${transcript.key} ${window / 1000}k compaction ${result.compactions} at message ${appended}: ` +
          `${items.modifiedFiles.length} modified, ${items.files.length} files; ledger ${ledgerAt === -1 ? 'absent' : 'present'}; ${overflow}; ` +
          `served ${served.text.length} chars, ${openai.messages.length} messages\n  ` +
          misses.join('\n  '),
      );
      if (process.env.BENCH_SURVIVAL_DUMP) {
        const name = `${transcript.key.replace(/[^\w.-]+/g, '_')}-${window}-${result.compactions}.json`;
        writeFileSync(join(process.env.BENCH_SURVIVAL_DUMP, name), JSON.stringify(openai.messages, null, 1));
      }
    }
    const summaryMessage = native.messages.findLast((m) => m.summary);
    const summary = summarizerText(
      (summaryMessage?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('\n'),
    );
    for (const baseline of BASELINES) {
      const context = contextText(baselineContext(baseline, prefix, summary, usable));
      addCounts(result.baselines[baseline], await countSurvival(items, context, null));
    }
  };

  for (const [index, stored] of transcript.messages.entries()) {
    const { usage: _usage, ...message } = stored;
    const response = await client.appendMessages(sessionId, [message]);
    let active = response.compaction ?? response.status.activeCompaction;
    let completed = false;
    while (active && !TERMINAL.has(active.status)) {
      completed = (await waitEnded(client, active.id)) === 'completed' || completed;
      // A follow-up the worker chained to it: the agent waits for that one too.
      active = (await client.getSession(sessionId)).status.activeCompaction;
    }
    if (completed) {
      result.compactions++;
      await measure(index + 1);
    }
  }
  return result;
}

/**
 * `GET …/recall?kind=K` as a function, or `null` when the route does not take `kind` (tried once:
 * an API without the ledger's listings refuses the parameter).
 */
async function kindRecall(
  api: Api,
  sessionId: string,
): Promise<((kind: string) => Promise<string | null>) | null> {
  // Every page, as an agent paging through the listing would (a page holds at most 500 entries).
  const get = async (kind: string): Promise<string | null> => {
    const texts: string[] = [];
    let cursor: string | null = null;
    do {
      const after: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const response = await fetch(
        `${api.apiUrl}/v1/sessions/${encodeURIComponent(sessionId)}/recall?kind=${kind}&limit=500${after}`,
        { headers: { authorization: `Bearer ${api.apiKey}` } },
      );
      if (!response.ok) return null;
      const body = (await response.json()) as { nextCursor?: string | null };
      // The listing's strings as text (a JSON body escapes quotes and line breaks a command holds).
      texts.push(toolInputStrings(body).join('\n'));
      cursor = body.nextCursor ?? null;
    } while (cursor !== null);
    return texts.join('\n');
  };
  return (await get('files')) === null ? null : get;
}
