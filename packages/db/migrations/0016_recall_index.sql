-- Recall: the agent searches what compaction took out of its view (messages behind the boundary,
-- pruned tool outputs), and looks cleared outputs up by call id.
--
-- Only parts that left the model's view are indexed for search: `parts.recallable`, false on
-- append, set by the worker when a part leaves the view (a prune sets it in the statement that
-- writes the part's mark; a compaction sets it on the parts it puts behind the boundary, in
-- windows of seqs, before its completion). Indexing every part on append computed its words on
-- the hot path: 70,000 small tool parts took 11.4 s to insert instead of 0.49 s. The column's
-- default is a constant, so adding it rewrites nothing. The flag says "may be searched"; the
-- recall query still checks the part is out of view (a revert moves the boundary back and
-- leaves the flag: harmless).
--
-- The search index is GIN over (session_pk, words of the part's text): btree_gin lets the session
-- be a key of the same index, so a search intersects the session's posting list with the words'
-- (GIN's fast scan skips through the larger one) and never reads another session's or tenant's
-- entries. The words are those of the part's one text column (text, else the tool output, else the
-- tool error), its first 100,000 characters: a tsvector holds at most 1 MB, and flagging a part
-- must never fail on an output's vocabulary. 'simple' neither stems nor drops stop words: tool
-- output is code, paths and identifiers as much as English. Slashes, dots, at signs, colons and
-- backslashes become spaces first: the parser would otherwise keep `src/parser.ts` or `x.com/a` as
-- one word, and `parser` would not find it. The recall query spells the same expression
-- (packages/db/src/queries/recall.ts, RECALL_VECTOR): change both together.
--
-- btree_gin is a trusted extension: the database owner can create it without superuser rights.
--
-- The backfill flags what is already out of view: parts behind each session's latest completed
-- boundary, and pruned outputs. On a large database it rewrites those rows (most of `parts` on a
-- long-lived service: a new version of each row, and as much dead space for vacuum) in one
-- statement that holds their row locks until the migration commits.
--
-- Building the search index blocks writes to `parts` while it runs (migrations run in a
-- transaction, so not CONCURRENTLY); it reads every row but computes words only for flagged ones.
-- On a large database, run the backfill and build both indexes by hand first (CREATE INDEX
-- CONCURRENTLY, same definitions); the backfill then finds nothing left to flag and IF NOT EXISTS
-- leaves the indexes be.
ALTER TABLE "parts" ADD COLUMN IF NOT EXISTS "recallable" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
UPDATE "parts" p SET "recallable" = true
FROM (
  SELECT s.pk AS session_pk,
         CASE WHEN l.summary_message_ids IS NULL THEN 0
              ELSE coalesce(l.boundary_seq,
                     (SELECT max(m.seq) + 1 FROM "messages" m
                      WHERE m.session_pk = s.pk AND m.id = any(l.summary_message_ids)),
                     2147483647)
         END AS first_kept
  FROM "sessions" s
  LEFT JOIN LATERAL (
    SELECT c.boundary_seq, c.summary_message_ids FROM "compactions" c
    WHERE c.session_pk = s.pk AND c.status = 'completed'
    ORDER BY c.finished_at DESC, c.requested_at DESC LIMIT 1
  ) l ON true
) b
WHERE p.session_pk = b.session_pk AND NOT p.recallable AND p.type IN ('text', 'reasoning', 'tool')
  AND (p.seq < b.first_kept
       OR EXISTS (SELECT 1 FROM "part_prunes" pp
                  WHERE pp.session_pk = p.session_pk AND pp.seq = p.seq AND pp.idx = p.idx));
--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gin;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "parts_recall_search_idx" ON "parts" USING gin (
  "session_pk",
  to_tsvector('simple'::regconfig,
    translate(left(coalesce("text", "tool_output", "tool_error", ''), 100000), '/.@:\', '     '))
) WHERE "recallable" AND "type" IN ('text', 'reasoning', 'tool');
--> statement-breakpoint
-- Recall by call id: a session's tool calls by id (ids are unique per message, not per session).
CREATE INDEX IF NOT EXISTS "parts_session_call_idx" ON "parts" USING btree ("session_pk", "call_id")
  WHERE "type" = 'tool';
