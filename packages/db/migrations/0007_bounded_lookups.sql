-- A session's latest completed compaction (the context view's boundary: every context read,
-- status and append reads it) and its last finished one (the status) were found by sorting all
-- of the session's compactions, so those statements grew with them: replaying 6,000 messages
-- (269 compactions), the status statement went from 0.25 to 2.0 ms over the run. In the
-- queries' order (`finished_at desc, requested_at desc`, nulls first as `desc` sorts them),
-- each is the first entry of an index scan.
DROP INDEX "compactions_session_completed_idx";--> statement-breakpoint
CREATE INDEX "compactions_session_latest_completed_idx" ON "compactions" USING btree ("session_pk","finished_at" DESC NULLS FIRST,"requested_at" DESC NULLS FIRST) WHERE "compactions"."status" = 'completed';--> statement-breakpoint
CREATE INDEX "compactions_session_finished_idx" ON "compactions" USING btree ("session_pk","finished_at" DESC NULLS FIRST) WHERE "compactions"."finished_at" is not null;--> statement-breakpoint
-- `compactor_append` looked up the batch's message ids with `m.session_pk = p_session AND m.id =
-- ANY(p_message_ids)`. A function's statements keep the generic plan they were first given on a
-- connection, and on a new database (statistics say a session has one message) that plan scanned
-- the whole session by `session_pk` and filtered the ids: replaying 6,000 messages, the append went
-- from 0.4 to 1.0 ms over the run. One unique lookup per id cannot be planned as a scan. The
-- unfinished-call lookup keeps its form: it scans the partial index of unfinished calls, which
-- holds only those.
CREATE OR REPLACE FUNCTION compactor_append(
  p_session bigint,
  p_message_ids text[],
  p_call_ids text[],
  p_messages jsonb,
  p_parts jsonb,
  p_check boolean
) RETURNS TABLE (
  r_kind text, r_pk bigint, r_id text, r_seq integer, r_hash text, r_message_id text, r_tool text, r_input jsonb
) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM sessions s WHERE s.pk = p_session FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'missing'::text, NULL::bigint, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text, NULL::jsonb;
    RETURN;
  END IF;
  IF p_check THEN
    -- Run after the lock, so each statement sees what a concurrent append committed meanwhile.
    RETURN QUERY
      -- One unique lookup per id of the batch (migration 0007 says why).
      SELECT 'message'::text, m.pk, m.id, m.seq, m.content_hash, NULL::text, NULL::text, NULL::jsonb
      FROM unnest(p_message_ids) AS i(id)
      CROSS JOIN LATERAL (
        SELECT k.pk, k.id, k.seq, k.content_hash FROM messages k
        WHERE k.session_pk = p_session AND k.id = i.id OFFSET 0
      ) m
      UNION ALL
      -- The predicate of the partial index parts_session_unfinished_call_idx.
      SELECT 'call'::text, NULL::bigint, p.call_id, NULL::integer, NULL::text, m.id, p.tool, p.tool_input
      FROM parts p JOIN messages m ON m.pk = p.message_pk
      WHERE p.session_pk = p_session AND p.call_id = ANY(p_call_ids)
        AND p.tool_status IN ('pending', 'running');
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  IF p_messages IS NULL OR jsonb_array_length(p_messages) = 0 THEN
    RETURN;
  END IF;
  RETURN QUERY
    WITH reserved AS (
      UPDATE sessions s SET last_seq = s.last_seq + jsonb_array_length(p_messages), updated_at = now()
      WHERE s.pk = p_session
      RETURNING s.last_seq - jsonb_array_length(p_messages) AS before
    ),
    new_messages AS (
      INSERT INTO messages (session_pk, seq, id, role, finish, error, usage_input, usage_output,
                            usage_reasoning, usage_cache_read, usage_cache_write, metadata, summary,
                            compaction_id, content_hash, created_at)
      SELECT p_session, r.before + m.ord + 1, m.id, m.role, m.finish, m.error, m.usage_input,
             m.usage_output, m.usage_reasoning, m.usage_cache_read, m.usage_cache_write,
             coalesce(m.metadata, '{}'::jsonb), m.summary, m.compaction_id, m.content_hash, m.created_at
      FROM reserved r,
           jsonb_to_recordset(p_messages) AS m(
             ord int, id text, role text, finish text, error jsonb, usage_input int, usage_output int,
             usage_reasoning int, usage_cache_read int, usage_cache_write int, metadata jsonb,
             summary boolean, compaction_id text, content_hash text, created_at timestamptz)
      RETURNING messages.pk, messages.id, messages.seq
    ),
    new_parts AS (
      INSERT INTO parts (message_pk, session_pk, seq, idx, type, text, call_id, tool, tool_status,
                         tool_input, tool_output, tool_error, mime, filename, url, compaction_auto,
                         tokens, output_tokens)
      SELECT nm.pk, p_session, nm.seq, p.idx, p.type, p.text, p.call_id, p.tool, p.tool_status,
             p.tool_input, p.tool_output, p.tool_error, p.mime, p.filename, p.url, p.compaction_auto,
             p.tokens, p.output_tokens
      FROM jsonb_to_recordset(p_parts) AS p(
             message_id text, idx int, type text, text text, call_id text, tool text, tool_status text,
             tool_input jsonb, tool_output text, tool_error text, mime text, filename text, url text,
             compaction_auto boolean, tokens int, output_tokens int)
      JOIN new_messages nm ON nm.id = p.message_id
    )
    SELECT 'inserted'::text, nm.pk, nm.id, nm.seq, NULL::text, NULL::text, NULL::text, NULL::jsonb
    FROM new_messages nm;
END
$$;
