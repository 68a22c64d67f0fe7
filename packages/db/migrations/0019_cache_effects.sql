-- What each prune and compaction cost in prompt cache (core `cacheEffect`, docs/DESIGN.md "Prompt
-- cache"): the cached tokens the next prompt no longer reads, what that prompt costs more, what
-- every later one costs less, and the turns until that repays it. Nullable, no default on
-- compactions: adding them rewrites nothing, and compactions from before stay null.
ALTER TABLE "compactions" ADD COLUMN "cache_invalidated_tokens" integer;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "cache_rewrite_cost_usd" numeric(14, 8);--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "cache_saving_per_turn_usd" numeric(14, 8);--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "cache_break_even_turns" integer;--> statement-breakpoint
-- A prune job's record (after a finished turn, or POST /prune): one row per job that ran.
CREATE TABLE "prune_runs" (
  "job_id" text PRIMARY KEY NOT NULL,
  "session_pk" bigint NOT NULL,
  "tenant_id" text NOT NULL,
  "trigger" text NOT NULL,
  "parts" integer NOT NULL,
  "tokens" integer NOT NULL,
  "tokens_before" integer NOT NULL,
  "tokens_after" integer NOT NULL,
  "cache_invalidated_tokens" integer NOT NULL,
  "cache_rewrite_cost_usd" numeric(14, 8),
  "cache_saving_per_turn_usd" numeric(14, 8),
  "cache_break_even_turns" integer,
  "ran_at" timestamp with time zone NOT NULL
);--> statement-breakpoint
ALTER TABLE "prune_runs" ADD CONSTRAINT "prune_runs_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "prune_runs_session_ran_idx" ON "prune_runs" USING btree ("session_pk","ran_at");--> statement-breakpoint
CREATE INDEX "prune_runs_tenant_ran_idx" ON "prune_runs" USING btree ("tenant_id","ran_at");--> statement-breakpoint
-- The analyst views: the compactions view gains the cache columns (last: a replaced view keeps
-- its columns and its grants), prune runs get a view of their own.
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
  c.fallback_message,
  c.cache_invalidated_tokens,
  c.cache_rewrite_cost_usd,
  c.cache_saving_per_turn_usd,
  c.cache_break_even_turns
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
CREATE VIEW "analytics"."prune_runs" AS
SELECT
  r.job_id,
  r.tenant_id,
  s.id AS session_id,
  r.trigger,
  r.ran_at,
  r.parts AS pruned_parts,
  r.tokens AS pruned_tokens,
  r.tokens_before,
  r.tokens_after,
  r.tokens_before - r.tokens_after AS tokens_saved,
  r.cache_invalidated_tokens,
  r.cache_rewrite_cost_usd,
  r.cache_saving_per_turn_usd,
  r.cache_break_even_turns
FROM prune_runs r
JOIN sessions s ON s.pk = r.session_pk;--> statement-breakpoint
COMMENT ON VIEW "analytics"."prune_runs" IS 'One row per prune job that ran: outputs cleared, sizes (tokens), prompt-cache effect. No message text.';--> statement-breakpoint
-- The analysts' role reads the new view (0004 created the role, or warned that an administrator must).
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'compactor_analyst') THEN
    GRANT SELECT ON analytics.prune_runs TO compactor_analyst;
  END IF;
END
$$;
