-- An Idempotency-Key whose manual compaction request joined the active compaction (instead of
-- creating one, which records the key on its own row) stays bound to what that request asked
-- for: the key with another body is a 409 however the first request was answered.
CREATE TABLE "compaction_join_keys" (
	"session_pk" bigint NOT NULL,
	"idempotency_key" text NOT NULL,
	"compaction_id" text NOT NULL,
	"strategy" text NOT NULL,
	"keep_recent_tokens" integer,
	"instructions" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "compaction_join_keys_session_pk_idempotency_key_pk" PRIMARY KEY("session_pk","idempotency_key")
);
--> statement-breakpoint
ALTER TABLE "compaction_join_keys" ADD CONSTRAINT "compaction_join_keys_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "compaction_join_keys" ADD CONSTRAINT "compaction_join_keys_compaction_id_compactions_id_fk" FOREIGN KEY ("compaction_id") REFERENCES "public"."compactions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "compaction_join_keys_compaction_idx" ON "compaction_join_keys" USING btree ("compaction_id");