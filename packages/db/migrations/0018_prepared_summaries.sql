CREATE TABLE "prepared_summaries" (
	"session_pk" bigint PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"base_compaction_id" text,
	"settings_key" text,
	"covers_through_seq" integer,
	"cut_seq" integer,
	"changed_seq" integer,
	"outcome" jsonb,
	"model" text,
	"usage_input" integer,
	"usage_output" integer,
	"cost_usd" numeric(12, 6),
	"error_code" text,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"prepared_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "prepared_summaries" ADD CONSTRAINT "prepared_summaries_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
-- Analysts see what drafts cost (docs/ANALYTICS.md), never their text: a draft that a compaction
-- finalized names it (`used_by`; that compaction's LLM columns carry the same spend, so sum one
-- or the other), an unused one is spend no compaction shows.
CREATE VIEW "analytics"."prepared_summaries" AS
SELECT
  p.id AS draft_id,
  s.tenant_id,
  s.id AS session_id,
  p.status,
  p.error_code,
  p.base_compaction_id,
  p.cut_seq,
  p.requested_at,
  p.prepared_at,
  p.model AS llm_model,
  p.usage_input AS llm_input_tokens,
  p.usage_output AS llm_output_tokens,
  p.cost_usd AS llm_cost_usd,
  used.id AS used_by
FROM prepared_summaries p
JOIN sessions s ON s.pk = p.session_pk
LEFT JOIN LATERAL (
  SELECT c.id FROM compactions c
  WHERE c.session_pk = p.session_pk AND c.details -> 'prepared' ->> 'draftId' = p.id
  ORDER BY c.requested_at DESC
  LIMIT 1
) used ON true;--> statement-breakpoint
COMMENT ON VIEW "analytics"."prepared_summaries" IS 'One row per session''s latest prepared summary (policy prepare): status, LLM spend, and the compaction that used it. No text.';--> statement-breakpoint
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'compactor_analyst') THEN
    GRANT SELECT ON analytics.prepared_summaries TO compactor_analyst;
  END IF;
END
$$;
