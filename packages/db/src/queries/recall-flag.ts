import { sql } from 'drizzle-orm';
import { recallVectorOf } from '@compactor/core';
import type { DbOrTx } from '../client';
import { executePrepared } from '../prepared';

/**
 * Text read and turned into words per statement when parts are flagged (db recallable.ts), in
 * UTF-8 bytes: a window behind a first boundary can hold 500 seqs of 100 KB outputs, and the
 * worker must neither hold all of it at once nor block its event loop on it (about 30 ms a MB
 * of code and prose, core `recallVectorOf`).
 */
export const RECALL_WORDS_BATCH_BYTES = 1 << 20;

/** A part's text counts at most this much against a batch (its first 100,000 characters). */
const DOCUMENT_MAX_BYTES = 400_000;

/** A part's text as the flag reads it: its one text column, its first 100,000 characters. */
export const FLAG_DOCUMENT = sql.raw(`left(coalesce(p.text, p.tool_output, p.tool_error, ''), 100000)`);

/** What a part's text costs a batch, in SQL: its size without reading it (a TOAST header). */
export const FLAG_DOCUMENT_BYTES = sql.raw(
  `least(octet_length(coalesce(p.text, p.tool_output, p.tool_error, '')), ${DOCUMENT_MAX_BYTES})`,
);

/** A part to flag, or a flagged call to give its arguments, as the flag statements read it. */
export interface FlagCandidate {
  pk: number;
  /** Its `tool_status` when read: a call that moved since gets Postgres's words instead. */
  status: string | null;
  /** Flagged already: only its arguments are written. */
  flagged: boolean;
  /** Its text's bytes ({@link FLAG_DOCUMENT_BYTES}); 0 when flagged. */
  bytes: number;
  /** Its text when the read brought it; null: read here. */
  doc: string | null;
  /** The `recall_arguments` to write, or null. */
  args: string | null;
}

/**
 * Flags `candidates` recallable with their words, and writes their arguments, in batches of at
 * most {@link RECALL_WORDS_BATCH_BYTES} of text, in order: the texts a batch lacks are read by
 * primary key, their words computed here and sent as tsvector literals, one update a batch
 * (`words: false`: none read or sent, Postgres's parser computes them in the update). A
 * call whose status moved between the read and the update (its result PATCHed in), or a part
 * purged meanwhile, gets Postgres's words of its text as it is then (migration 0030). Returns the
 * parts whose flag this flipped.
 */
export async function flagWithWords(
  db: DbOrTx,
  sessionPk: number,
  candidates: readonly FlagCandidate[],
  { words = true }: { words?: boolean } = {},
): Promise<number> {
  let flagged = 0;
  let batch: FlagCandidate[] = [];
  let bytes = 0;
  for (const candidate of candidates) {
    const cost = candidate.flagged ? 0 : Math.min(candidate.bytes, DOCUMENT_MAX_BYTES);
    if (batch.length > 0 && bytes + cost > RECALL_WORDS_BATCH_BYTES) {
      flagged += await flagBatch(db, sessionPk, batch, words);
      batch = [];
      bytes = 0;
    }
    batch.push(candidate);
    bytes += cost;
  }
  if (batch.length > 0) flagged += await flagBatch(db, sessionPk, batch, words);
  return flagged;
}

async function flagBatch(
  db: DbOrTx,
  sessionPk: number,
  batch: FlagCandidate[],
  words: boolean,
): Promise<number> {
  const unread = words ? batch.filter((c) => !c.flagged && c.doc === null).map((c) => c.pk) : [];
  const read = new Map<number, { doc: string; status: string | null }>();
  if (unread.length > 0) {
    const { rows } = await executePrepared<{ pk: number; status: string | null; doc: string }>(
      db,
      sql`select p.pk, p.tool_status as status, ${FLAG_DOCUMENT} as doc from parts p
          where p.pk = any(${sql.param(unread)}::bigint[]) and p.session_pk = ${sessionPk}`,
    );
    for (const row of rows) read.set(Number(row.pk), { doc: row.doc, status: row.status });
  }
  const parts = batch.map((c) => {
    const fresh = read.get(c.pk);
    const doc = c.flagged || !words ? null : (c.doc ?? fresh?.doc ?? null);
    return {
      pk: c.pk,
      status: fresh?.status ?? c.status,
      words: doc === null ? null : recallVectorOf(doc),
      args: c.args,
    };
  });
  const { rows } = await executePrepared<{ flagged: string }>(
    db,
    sql`with v as (
          select * from unnest(${sql.param(parts.map((p) => p.pk))}::bigint[], ${sql.param(parts.map((p) => p.status))}::text[],
                               ${sql.param(parts.map((p) => p.words))}::text[], ${sql.param(parts.map((p) => p.args))}::text[])
            as v(pk, status, words, args)
        ),
        written as (
          update parts p set recallable = true, recall_arguments = coalesce(v.args, p.recall_arguments),
                 recall_words = case when p.recallable then p.recall_words
                                     when p.tool_status is not distinct from v.status and p.purged_at is null
                                          and v.words is not null then v.words::tsvector
                                     else parts_recall_words_of(coalesce(p.text, p.tool_output, p.tool_error)) end
          from v join parts q on q.pk = v.pk
          where p.pk = v.pk and q.session_pk = ${sessionPk} and (not q.recallable or v.args is not null)
          returning not q.recallable as flipped
        )
        select count(*) filter (where flipped) as flagged from written`,
  );
  return Number(rows[0]?.flagged ?? 0);
}
