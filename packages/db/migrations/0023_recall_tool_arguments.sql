-- Recall over tool arguments: `q=src/api/routes.ts` finds the calls whose arguments named the path
-- (or ran the command), not only text and outputs that mention it. `recall_arguments` holds the
-- paths and commands core's ledger classifiers read from a tool call's input (one a line), written
-- when the compaction that puts the call behind its boundary flags it recallable, in the same
-- windows of seqs (db `markRecallableBehind`); null for every other part and for calls flagged
-- before this column existed. Adding a null column rewrites nothing.
--
-- Its own GIN index, beside `parts_recall_search_idx` rather than folded into it: the search
-- ORs the two (a bitmap OR of two index scans), and the existing index is not rebuilt. Same
-- spelling of words as migration 0016 (separators to spaces, 'simple'); the recall query spells
-- the same expression (packages/db/src/queries/recall.ts, ARGUMENTS_VECTOR): change both together.
ALTER TABLE "parts" ADD COLUMN IF NOT EXISTS "recall_arguments" text;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "parts_recall_arguments_idx" ON "parts" USING gin (
  "session_pk",
  to_tsvector('simple'::regconfig, translate("recall_arguments", '/.@:\', '     '))
) WHERE "recall_arguments" IS NOT NULL;
