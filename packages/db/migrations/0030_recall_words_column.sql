-- Recall's words stored: `parts.recall_words`, a tsvector the worker computes (core
-- `recallVectorOf`: runs of Unicode letters and digits, lower-cased, the text's first 100,000
-- characters) and sends as a literal with the flag (db `markRecallableBehind`,
-- `markPrunedRecallable`). The search index was an expression over the text: every flagged part
-- ran Postgres's text-search parser, most of a compaction's Postgres CPU (on a 240 KB window the
-- parser 21-27 ms, reading the same words as a tsvector literal 3.5 ms). A query's words come
-- from the same tokenizer (core `recallQueryOf`), so what a search looks for is spelled as the
-- column holds it.
--
-- Rows flagged before this migration keep the words today's index computed:
-- `parts_recall_words_of` below is that expression (slashes, dots, at signs, colons and
-- backslashes to spaces, then the 'simple' parser; migrations 0016, 0029). It is also the
-- fallback for a part flagged without words (a writer that does not send them) and for a flagged
-- part whose text changes (a compacted task's result arriving later, the retention purge
-- clearing it): the triggers below, so nothing flagged is left without words or with stale ones.
-- The parser's words and the worker's agree on the words a query names (runs of letters and
-- digits, hyphenated and underscored names split) except where the parser reads a markup tag or
-- entity (`<div>`, `&amp;`) as no word, or keeps a sign (`-5`): those stay unfound in old rows,
-- as they were.
--
-- On a large database the backfill rewrites every flagged row (as migration 0016's did) and the
-- index build blocks writes to `parts` (migrations run in a transaction, so not CONCURRENTLY).
-- Run both by hand first: the column and function, the backfill in batches, then
-- CREATE INDEX CONCURRENTLY "parts_recall_words_idx" (same definition); the backfill then finds
-- nothing left, IF NOT EXISTS leaves the index be, and the migration drops the old index and
-- renames the new one.
ALTER TABLE "parts" ADD COLUMN IF NOT EXISTS "recall_words" tsvector;
--> statement-breakpoint
-- A flagged part's words are compressed as they are written (a 2 KB output's are about as long as
-- its text): lz4 where the server has it, about 2.5 ms less of the flag update's ~20 ms on a
-- 240 KB window than the default pglz. A server built without lz4 keeps the default.
DO $$
BEGIN
  ALTER TABLE "parts" ALTER COLUMN "recall_words" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
  NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION parts_recall_words_of(doc text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_tsvector('simple'::regconfig,
    replace(replace(replace(replace(replace(left(coalesce(doc, ''), 100000),
      '/', ' '), '.', ' '), '@', ' '), ':', ' '), '\', ' '))
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION parts_recall_words_fallback() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.recall_words := parts_recall_words_of(coalesce(NEW.text, NEW.tool_output, NEW.tool_error));
  RETURN NEW;
END
$$;
--> statement-breakpoint
-- Flagged without words: only a writer that does not compute them (the flag statements send them).
CREATE OR REPLACE TRIGGER parts_recall_words_missing BEFORE UPDATE OF recallable ON "parts"
FOR EACH ROW WHEN (NEW.recallable AND NEW.recall_words IS NULL AND NEW.type IN ('text', 'reasoning', 'tool'))
EXECUTE FUNCTION parts_recall_words_fallback();
--> statement-breakpoint
-- A flagged part's text written again: the words follow it, as the expression index's did.
CREATE OR REPLACE TRIGGER parts_recall_words_changed BEFORE UPDATE OF text, tool_output, tool_error ON "parts"
FOR EACH ROW WHEN (NEW.recallable AND NEW.type IN ('text', 'reasoning', 'tool'))
EXECUTE FUNCTION parts_recall_words_fallback();
--> statement-breakpoint
UPDATE "parts" SET "recall_words" = parts_recall_words_of(coalesce("text", "tool_output", "tool_error"))
WHERE "recallable" AND "type" IN ('text', 'reasoning', 'tool') AND "recall_words" IS NULL;
--> statement-breakpoint
-- GIN over (session, words), btree_gin for the session (migration 0016 says why), of the parts
-- out of view only.
CREATE INDEX IF NOT EXISTS "parts_recall_words_idx" ON "parts" USING gin ("session_pk", "recall_words")
WHERE "recallable" AND "type" IN ('text', 'reasoning', 'tool');
--> statement-breakpoint
DROP INDEX IF EXISTS "parts_recall_search_idx";
--> statement-breakpoint
ALTER INDEX "parts_recall_words_idx" RENAME TO "parts_recall_search_idx";
