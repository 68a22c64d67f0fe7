-- A completed compaction whose summary the truncate fallback wrote (the summarizer failed for
-- good) says so in columns of its own, which the API, events and analytics read. Nullable, no
-- default: adding them rewrites nothing.
ALTER TABLE "compactions" ADD COLUMN "fallback_code" text;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "fallback_message" text;--> statement-breakpoint
-- Compactions that fell back before these columns existed recorded it in their details only.
UPDATE "compactions"
SET "fallback_code" = "details" -> 'fallback' ->> 'code',
    "fallback_message" = "details" -> 'fallback' ->> 'message'
WHERE "status" = 'completed' AND jsonb_typeof("details" -> 'fallback') = 'object';--> statement-breakpoint
-- The analyst views read the columns; replaced views keep their grants (docs/ANALYTICS.md).
CREATE OR REPLACE VIEW "analytics"."compactions" AS
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
  c.fallback_code,
  c.error_code,
  c.error_message,
  -- New columns go last: a replaced view keeps its columns' names and order.
  c.fallback_message
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
CREATE OR REPLACE VIEW "analytics"."daily" AS
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
  percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) FILTER (WHERE status = 'completed') AS p95_duration_ms,
  (count(*) FILTER (WHERE status = 'completed' AND fallback_code IS NOT NULL))::int AS fallbacks
FROM "analytics"."compactions"
GROUP BY tenant_id, (requested_at AT TIME ZONE 'UTC')::date;--> statement-breakpoint
COMMENT ON VIEW "analytics"."daily" IS 'Per tenant per UTC day of request: compactions by status, tokens saved, LLM spend, p50/p95 duration (ms) of completed ones, completed ones that fell back to truncation.';
