-- Recall's search index, its words spelled with `replace` instead of `translate`: the same words
-- (slashes, dots, at signs, colons and backslashes to spaces, then 'simple'; migration 0016 says
-- why), for less CPU where every flagged part pays it, the compaction's flag update. `translate`
-- looks every character of the text up in its map, about 60 ns a character; five nested
-- `replace`s each search for one byte (an ASCII byte never occurs inside a multibyte UTF-8
-- character), about a quarter of that; on 316 KB of code-like text, 20 ms against 5 ms. The words
-- themselves (the parser) are the rest, and are what the search finds, so they stay. The recall
-- query spells the same expression (packages/db/src/queries/recall.ts, RECALL_VECTOR; the schema,
-- src/schema/parts.ts): change all together. The arguments' index (0023) keeps `translate`: its
-- texts are a few paths each.
--
-- The new index is built under its own name, then takes the old one's place. Building it blocks
-- writes to `parts` while it runs (migrations run in a transaction, so not CONCURRENTLY) and
-- computes the words of every flagged part again. On a large database, build it by hand first
-- with CREATE INDEX CONCURRENTLY (same name and definition): IF NOT EXISTS then leaves it be, and
-- the migration only drops the old index and renames the new one.
CREATE INDEX IF NOT EXISTS "parts_recall_words_idx" ON "parts" USING gin (
  "session_pk",
  to_tsvector('simple'::regconfig,
    replace(replace(replace(replace(replace(
      left(coalesce("text", "tool_output", "tool_error", ''), 100000),
      '/', ' '), '.', ' '), '@', ' '), ':', ' '), '\', ' '))
) WHERE "recallable" AND "type" IN ('text', 'reasoning', 'tool');
--> statement-breakpoint
DROP INDEX IF EXISTS "parts_recall_search_idx";
--> statement-breakpoint
ALTER INDEX "parts_recall_words_idx" RENAME TO "parts_recall_search_idx";
