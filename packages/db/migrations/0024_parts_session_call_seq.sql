-- A session's tool calls by id, newest first: call ids are unique per message, not per session
-- (some providers number calls `call_0`, `call_1`… afresh every turn), so "the call with this id"
-- means the newest, and with `seq` in the index that is one index entry, not every call that
-- ever had the id (the drop-in's tool results, db `findToolCallOwners`).
DROP INDEX IF EXISTS "parts_session_call_idx";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "parts_session_call_idx" ON "parts" USING btree ("session_pk", "call_id", "seq")
  WHERE "type" = 'tool';
