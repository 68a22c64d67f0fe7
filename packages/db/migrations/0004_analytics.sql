-- Retention: when the purge (`npm run retention`) cleared a row's content. Nullable, no default:
-- adding them rewrites nothing.
ALTER TABLE "messages" ADD COLUMN "purged_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "parts" ADD COLUMN "purged_at" timestamp with time zone;--> statement-breakpoint
-- Analyst views (docs/ANALYTICS.md): a stable surface over the compaction history that never
-- exposes message text, summaries, drafts or the requests' instructions. Durations are in
-- milliseconds (double precision), costs in US dollars, tokens as counted by the system.
CREATE SCHEMA IF NOT EXISTS "analytics";--> statement-breakpoint
COMMENT ON SCHEMA "analytics" IS 'Read-only views over the compaction history, for analysts (docs/ANALYTICS.md). No message text.';--> statement-breakpoint
CREATE VIEW "analytics"."compactions" AS
SELECT
  c.id AS compaction_id,
  s.tenant_id,
  s.id AS session_id,
  c.reason,
  c.strategy,
  c.status,
  c.force,
  c.attempts,
  c.requested_at,
  c.started_at,
  c.finished_at,
  (extract(epoch FROM c.finished_at - c.requested_at) * 1000)::double precision AS duration_ms,
  (extract(epoch FROM c.started_at - c.requested_at) * 1000)::double precision AS queued_ms,
  (extract(epoch FROM c.finished_at - c.started_at) * 1000)::double precision AS run_ms,
  steps.prune_ms,
  steps.summarize_ms,
  steps.finalize_ms,
  steps.step_records,
  steps.failed_steps,
  c.tokens_before,
  c.tokens_after,
  c.tokens_before - c.tokens_after AS tokens_saved,
  c.messages_before,
  c.messages_after,
  c.pruned_parts,
  c.pruned_tokens,
  c.model AS llm_model,
  c.usage_input AS llm_input_tokens,
  c.usage_output AS llm_output_tokens,
  c.cost_usd AS llm_cost_usd,
  CASE WHEN jsonb_typeof(c.details -> 'calls') = 'number' THEN (c.details ->> 'calls')::numeric::int END AS llm_calls,
  c.details ->> 'writtenBy' AS written_by,
  c.details -> 'fallback' ->> 'code' AS fallback_code,
  c.error_code,
  c.error_message
FROM compactions c
JOIN sessions s ON s.pk = c.session_pk
-- Per-step timings: the latest completed record of each step (a retried step has several).
LEFT JOIN LATERAL (
  SELECT
    (array_agg(d.ms ORDER BY d.pk DESC) FILTER (WHERE d.step = 'prune' AND d.status = 'completed'))[1] AS prune_ms,
    (array_agg(d.ms ORDER BY d.pk DESC) FILTER (WHERE d.step = 'summarize' AND d.status = 'completed'))[1] AS summarize_ms,
    (array_agg(d.ms ORDER BY d.pk DESC) FILTER (WHERE d.step = 'finalize' AND d.status = 'completed'))[1] AS finalize_ms,
    count(*)::int AS step_records,
    (count(*) FILTER (WHERE d.status = 'failed'))::int AS failed_steps
  FROM (
    SELECT cs.pk, cs.step, cs.status,
           (extract(epoch FROM cs.finished_at - cs.started_at) * 1000)::double precision AS ms
    FROM compaction_steps cs
    WHERE cs.compaction_id = c.id
  ) d
) steps ON true;--> statement-breakpoint
COMMENT ON VIEW "analytics"."compactions" IS 'One row per compaction: request, outcome, timings (ms), sizes (tokens), LLM spend. No message text.';--> statement-breakpoint
CREATE VIEW "analytics"."compaction_steps" AS
SELECT
  cs.pk AS step_record_id,
  cs.compaction_id,
  s.tenant_id,
  s.id AS session_id,
  c.reason,
  c.strategy,
  cs.step,
  cs.attempt,
  cs.status,
  cs.started_at,
  cs.finished_at,
  (extract(epoch FROM cs.finished_at - cs.started_at) * 1000)::double precision AS duration_ms,
  -- The step record's detail holds numbers and labels only; these are its documented fields.
  CASE WHEN cs.step = 'prune' AND jsonb_typeof(cs.detail -> 'parts') = 'number'
       THEN (cs.detail ->> 'parts')::numeric::int END AS pruned_parts,
  CASE WHEN cs.step = 'prune' AND jsonb_typeof(cs.detail -> 'tokens') = 'number'
       THEN (cs.detail ->> 'tokens')::numeric::int END AS pruned_tokens,
  cs.detail -> 'llm' ->> 'model' AS llm_model,
  CASE WHEN jsonb_typeof(cs.detail -> 'llm' -> 'usage' -> 'input') = 'number'
       THEN (cs.detail -> 'llm' -> 'usage' ->> 'input')::numeric::int END AS llm_input_tokens,
  CASE WHEN jsonb_typeof(cs.detail -> 'llm' -> 'usage' -> 'output') = 'number'
       THEN (cs.detail -> 'llm' -> 'usage' ->> 'output')::numeric::int END AS llm_output_tokens,
  CASE WHEN jsonb_typeof(cs.detail -> 'llm' -> 'costUsd') = 'number'
       THEN (cs.detail -> 'llm' ->> 'costUsd')::numeric END AS llm_cost_usd,
  CASE WHEN jsonb_typeof(cs.detail -> 'detail' -> 'calls') = 'number'
       THEN (cs.detail -> 'detail' ->> 'calls')::numeric::int END AS llm_calls,
  cs.detail ->> 'writtenBy' AS written_by,
  CASE WHEN cs.step = 'finalize' AND jsonb_typeof(cs.detail -> 'tokensAfter') = 'number'
       THEN (cs.detail ->> 'tokensAfter')::numeric::int END AS tokens_after,
  cs.error_message
FROM compaction_steps cs
JOIN compactions c ON c.id = cs.compaction_id
JOIN sessions s ON s.pk = c.session_pk;--> statement-breakpoint
COMMENT ON VIEW "analytics"."compaction_steps" IS 'One row per step attempt (prune, summarize, finalize) with its duration (ms). No message text.';--> statement-breakpoint
CREATE VIEW "analytics"."daily" AS
SELECT
  tenant_id,
  (requested_at AT TIME ZONE 'UTC')::date AS day,
  count(*)::int AS compactions,
  (count(*) FILTER (WHERE status = 'completed'))::int AS completed,
  (count(*) FILTER (WHERE status = 'failed'))::int AS failed,
  (count(*) FILTER (WHERE status = 'skipped'))::int AS skipped,
  (count(*) FILTER (WHERE status IN ('pending', 'running')))::int AS active,
  coalesce(sum(tokens_saved) FILTER (WHERE status = 'completed'), 0)::bigint AS tokens_saved,
  coalesce(sum(pruned_tokens), 0)::bigint AS pruned_tokens,
  coalesce(sum(llm_input_tokens), 0)::bigint AS llm_input_tokens,
  coalesce(sum(llm_output_tokens), 0)::bigint AS llm_output_tokens,
  coalesce(sum(llm_cost_usd), 0)::numeric AS llm_cost_usd,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE status = 'completed') AS p50_duration_ms,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE status = 'completed') AS p95_duration_ms
FROM "analytics"."compactions"
GROUP BY tenant_id, (requested_at AT TIME ZONE 'UTC')::date;--> statement-breakpoint
COMMENT ON VIEW "analytics"."daily" IS 'Per tenant per UTC day of request: compactions by status, tokens saved, LLM spend, p50/p95 duration (ms) of completed ones.';--> statement-breakpoint
CREATE VIEW "analytics"."sessions" AS
SELECT
  s.tenant_id,
  s.id AS session_id,
  s.model_id,
  s.provider,
  s.context_window,
  s.created_at,
  s.updated_at,
  -- Seqs are handed out one per stored message, from 1, and messages are never deleted.
  s.last_seq AS messages,
  agg.compactions,
  agg.completed,
  agg.failed,
  agg.tokens_saved,
  agg.pruned_tokens,
  agg.llm_cost_usd,
  agg.last_requested_at,
  latest.finished_at AS last_compacted_at,
  latest.tokens_after AS tokens_after_last_compaction,
  latest.messages_after AS messages_after_last_compaction
FROM sessions s
LEFT JOIN LATERAL (
  SELECT
    count(*)::int AS compactions,
    (count(*) FILTER (WHERE c.status = 'completed'))::int AS completed,
    (count(*) FILTER (WHERE c.status = 'failed'))::int AS failed,
    coalesce(sum(c.tokens_before - c.tokens_after) FILTER (WHERE c.status = 'completed'), 0)::bigint AS tokens_saved,
    coalesce(sum(c.pruned_tokens), 0)::bigint AS pruned_tokens,
    coalesce(sum(c.cost_usd), 0)::numeric AS llm_cost_usd,
    max(c.requested_at) AS last_requested_at
  FROM compactions c
  WHERE c.session_pk = s.pk
) agg ON true
-- The compaction the context view is built on (the same rule as the view: latest completed).
LEFT JOIN LATERAL (
  SELECT c.finished_at, c.tokens_after, c.messages_after
  FROM compactions c
  WHERE c.session_pk = s.pk AND c.status = 'completed'
  ORDER BY c.finished_at DESC, c.requested_at DESC
  LIMIT 1
) latest ON true;--> statement-breakpoint
COMMENT ON VIEW "analytics"."sessions" IS 'One row per session: compactions, tokens saved, LLM spend, the latest completed compaction and the size it left.';--> statement-breakpoint
-- The analysts' role. Roles are cluster-wide while this migration runs once per database, so
-- creating it must tolerate an existing role, and a concurrent creation by another database's
-- migration (duplicate_object, or unique_violation on pg_authid when both run at once). A
-- migrating user without CREATEROLE gets a warning instead of a failed migration: create the
-- role and run the two GRANTs below by hand (docs/ANALYTICS.md).
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'compactor_analyst') THEN
    BEGIN
      CREATE ROLE compactor_analyst NOLOGIN;
    EXCEPTION
      WHEN duplicate_object OR unique_violation THEN NULL;
      WHEN insufficient_privilege THEN
        RAISE WARNING 'role compactor_analyst not created (no CREATEROLE): see docs/ANALYTICS.md';
        RETURN;
    END;
  END IF;
  -- USAGE on this schema and SELECT on its views only: the views run with their owner's rights,
  -- so the role reads them without any right on the tables behind them (messages, parts).
  GRANT USAGE ON SCHEMA analytics TO compactor_analyst;
  GRANT SELECT ON analytics.compactions, analytics.compaction_steps, analytics.daily, analytics.sessions
    TO compactor_analyst;
END
$$;
