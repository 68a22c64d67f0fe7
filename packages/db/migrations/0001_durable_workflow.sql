CREATE TABLE "outbox" (
	"pk" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "outbox_pk_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"job_name" text NOT NULL,
	"job_id" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"dispatched_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "summary_draft" jsonb;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "progress_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "outbox_undispatched_idx" ON "outbox" USING btree ("created_at") WHERE "outbox"."dispatched_at" is null;--> statement-breakpoint
CREATE INDEX "compactions_active_progress_idx" ON "compactions" USING btree ("status","progress_at") WHERE "compactions"."status" in ('pending', 'running');