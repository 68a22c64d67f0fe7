CREATE TABLE "part_prunes" (
	"session_pk" bigint NOT NULL,
	"seq" integer NOT NULL,
	"idx" integer NOT NULL,
	"compacted_at" timestamp with time zone NOT NULL,
	"compacted_by" text NOT NULL,
	CONSTRAINT "part_prunes_pk" PRIMARY KEY("session_pk","seq","idx")
);
--> statement-breakpoint
CREATE INDEX "messages_session_pinned_idx" ON "messages" USING btree ("session_pk","seq") WHERE "messages"."role" = 'system' and not "messages"."summary";--> statement-breakpoint
CREATE INDEX "messages_session_summary_idx" ON "messages" USING btree ("session_pk","seq") WHERE "messages"."summary";--> statement-breakpoint
CREATE INDEX "parts_session_unfinished_call_idx" ON "parts" USING btree ("session_pk","call_id") WHERE "parts"."tool_status" in ('pending', 'running');--> statement-breakpoint
-- Existing prunes move to the narrow table before their columns go.
INSERT INTO "part_prunes" ("session_pk", "seq", "idx", "compacted_at", "compacted_by")
SELECT "session_pk", "seq", "idx", "compacted_at", coalesce("compacted_by", '') FROM "parts" WHERE "compacted_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "parts" DROP COLUMN "compacted_at";--> statement-breakpoint
ALTER TABLE "parts" DROP COLUMN "compacted_by";