-- An append that finds its session by the client's ids, in the same round trip: the API looked
-- the session up first (one statement) to learn its model, whose encoding counts the batch's
-- tokens. `compactor_append_to_session` takes the model id the caller counted with, locks the
-- session found by (tenant, id), returns it as JSON (kind 'session'), and appends through
-- `compactor_append` (with its checks) only when the model is still that one; otherwise it
-- returns kind 'model' and writes nothing (the caller counts again with the right encoding).
-- Rows: r_kind 'missing' (no such session), 'session', 'model', then compactor_append's.
CREATE OR REPLACE FUNCTION compactor_append_to_session(
  p_tenant text,
  p_id text,
  p_model_id text,
  p_message_ids text[],
  p_call_ids text[],
  p_messages jsonb,
  p_parts jsonb
) RETURNS TABLE (
  r_kind text, r_pk bigint, r_id text, r_seq integer, r_hash text, r_message_id text, r_tool text, r_input jsonb
) LANGUAGE plpgsql AS $$
DECLARE
  v_session sessions%ROWTYPE;
BEGIN
  SELECT * INTO v_session FROM sessions s WHERE s.tenant_id = p_tenant AND s.id = p_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'missing'::text, NULL::bigint, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text, NULL::jsonb;
    RETURN;
  END IF;
  RETURN QUERY SELECT 'session'::text, v_session.pk, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text, to_jsonb(v_session);
  IF v_session.model_id IS DISTINCT FROM p_model_id THEN
    RETURN QUERY SELECT 'model'::text, NULL::bigint, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text, NULL::jsonb;
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM compactor_append(v_session.pk, p_message_ids, p_call_ids, p_messages, p_parts, true);
END
$$;
