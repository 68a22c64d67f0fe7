-- The session's task registry (core tasks/, docs/TASKS.md): one row per tool call that is a
-- sub-agent or background task, written when its call is appended and when a PATCH reports its
-- status or result. The served context renders its "tasks" block from here after a compaction
-- boundary, so a running task outlives any summary. Bounded text only: `asked` and `outcome` are
-- excerpts of at most 300 characters (the call's input and result stay in `parts`).
CREATE TABLE "session_tasks" (
	"session_pk" bigint NOT NULL,
	"tenant_id" text NOT NULL,
	"call_id" text NOT NULL,
	"message_id" text NOT NULL,
	"seq" integer NOT NULL,
	"tool" text NOT NULL,
	"status" text NOT NULL,
	"asked" text NOT NULL,
	"dedupe_key" text NOT NULL,
	"outcome" text,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	-- The seq of the message that delivered a result landing after its call was compacted.
	"delivered_seq" integer,
	CONSTRAINT "session_tasks_pk" PRIMARY KEY ("session_pk", "call_id"),
	CONSTRAINT "session_tasks_status_check" CHECK ("status" IN ('pending', 'running', 'completed', 'error'))
);
--> statement-breakpoint
ALTER TABLE "session_tasks" ADD CONSTRAINT "session_tasks_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- The block's reads: the running tasks oldest first, the newest finished ones; each a bounded
-- range of one session's index entries, whatever the history or the other tenants hold.
CREATE INDEX "session_tasks_running_idx" ON "session_tasks" ("session_pk", "started_at", "call_id") WHERE "status" IN ('pending', 'running');--> statement-breakpoint
CREATE INDEX "session_tasks_finished_idx" ON "session_tasks" ("session_pk", "finished_at" DESC, "call_id") WHERE "status" IN ('completed', 'error');--> statement-breakpoint
-- `GET /v1/sessions/{id}/tasks`: newest call first, a page at a time.
CREATE INDEX "session_tasks_session_seq_idx" ON "session_tasks" ("session_pk", "seq" DESC, "call_id");--> statement-breakpoint
CREATE VIEW "analytics"."session_tasks" AS
SELECT
  t.tenant_id,
  s.id AS session_id,
  t.call_id,
  t.tool,
  t.status,
  t.seq,
  t.started_at,
  t.finished_at,
  extract(epoch FROM t.finished_at - t.started_at)::double precision AS seconds,
  t.delivered_seq IS NOT NULL AS delivered_late
FROM session_tasks t
JOIN sessions s ON s.pk = t.session_pk;--> statement-breakpoint
COMMENT ON VIEW "analytics"."session_tasks" IS 'One row per sub-agent or background task call: tool, status, times, whether its result was delivered after its call was compacted. No message text.';--> statement-breakpoint
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'compactor_analyst') THEN
    GRANT SELECT ON analytics.session_tasks TO compactor_analyst;
  END IF;
END
$$;
