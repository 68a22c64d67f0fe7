-- A prune walks a session's completed tool outputs newest first, summing their output tokens
-- (db `pruneToolOutputs`). Read through `parts_session_seq_idx` it visited every part of the range
-- in the heap (text parts, calls and errors too: 89,000 index entries and 2,071 heap blocks for
-- the 50,000 outputs of a never-compacted 100,000-message session). This partial index holds only
-- completed outputs, in (seq, idx) order, with every column the walk and its sums read, so the
-- walk is an index-only range scan of the outputs it may mark (471 buffers there).
CREATE INDEX IF NOT EXISTS "parts_session_output_idx" ON "parts" USING btree ("session_pk", "seq", "idx")
  INCLUDE ("tool", "output_tokens", "tokens", "clamped", "call_id", "pk")
  WHERE "type" = 'tool' AND "tool_status" = 'completed';
