-- A prune walks a session's completed tool outputs newest first, summing their output tokens
-- (db `pruneToolOutputs`). Read through `parts_session_seq_idx` it visited every part of the range
-- in the heap (text parts, calls and errors too: 89,000 index entries and 2,071 heap blocks for
-- the 50,000 outputs of a never-compacted 100,000-message session). This partial index holds only
-- completed outputs, in (seq, idx) order, with every column the walk and its sums read, so the
-- walk is an index-only range scan of the outputs it may mark (471 buffers there).
CREATE INDEX IF NOT EXISTS "parts_session_output_idx" ON "parts" USING btree ("session_pk", "seq", "idx")
  INCLUDE ("tool", "output_tokens", "tokens", "clamped", "call_id", "pk")
  WHERE "type" = 'tool' AND "tool_status" = 'completed';
--> statement-breakpoint
-- Whether a revert would show content the retention purge cleared (db `revertCompaction`): the
-- range a first compaction's revert restores is the session's whole history (3,626 buffers at
-- 100,000 messages, through the seq index). Only purged rows are indexed: a session never purged
-- has no entry, and a purged one is found at its first entry.
CREATE INDEX IF NOT EXISTS "messages_session_purged_idx" ON "messages" USING btree ("session_pk", "seq")
  WHERE "purged_at" IS NOT NULL AND NOT "summary";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "parts_session_purged_output_idx" ON "parts" USING btree ("session_pk", "seq")
  WHERE "purged_at" IS NOT NULL AND "type" = 'tool';
