CREATE TABLE "sessions" (
	"pk" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sessions_pk_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"model_id" text NOT NULL,
	"provider" text NOT NULL,
	"context_window" integer NOT NULL,
	"max_output_tokens" integer NOT NULL,
	"input_limit" integer,
	"policy" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"create_hash" text NOT NULL,
	"last_seq" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"pk" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "messages_pk_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"session_pk" bigint NOT NULL,
	"seq" integer NOT NULL,
	"id" text NOT NULL,
	"role" text NOT NULL,
	"finish" text,
	"error" jsonb,
	"usage_input" integer,
	"usage_output" integer,
	"usage_reasoning" integer,
	"usage_cache_read" integer,
	"usage_cache_write" integer,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"summary" boolean DEFAULT false NOT NULL,
	"compaction_id" text,
	"content_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "parts" (
	"pk" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "parts_pk_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"message_pk" bigint NOT NULL,
	"session_pk" bigint NOT NULL,
	"seq" integer NOT NULL,
	"idx" integer NOT NULL,
	"type" text NOT NULL,
	"text" text,
	"call_id" text,
	"tool" text,
	"tool_status" text,
	"tool_input" jsonb,
	"tool_output" text,
	"tool_error" text,
	"compacted_at" timestamp with time zone,
	"compacted_by" text,
	"mime" text,
	"filename" text,
	"url" text,
	"compaction_auto" boolean,
	"tokens" integer NOT NULL,
	"output_tokens" integer DEFAULT 0 NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "compaction_steps" (
	"pk" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "compaction_steps_pk_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"compaction_id" text NOT NULL,
	"step" text NOT NULL,
	"attempt" integer NOT NULL,
	"status" text NOT NULL,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"error_message" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "compactions" (
	"id" text PRIMARY KEY NOT NULL,
	"session_pk" bigint NOT NULL,
	"reason" text NOT NULL,
	"strategy" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"step" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"fence" integer DEFAULT 0 NOT NULL,
	"keep_recent_tokens" integer,
	"force" boolean DEFAULT false NOT NULL,
	"instructions" text,
	"idempotency_key" text,
	"covers_through_seq" integer,
	"boundary_seq" integer,
	"summary_message_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"tokens_before" integer,
	"tokens_after" integer,
	"messages_before" integer,
	"messages_after" integer,
	"pruned_parts" integer DEFAULT 0 NOT NULL,
	"pruned_tokens" integer DEFAULT 0 NOT NULL,
	"model" text,
	"usage_input" integer,
	"usage_output" integer,
	"cost_usd" numeric(12, 6),
	"error_code" text,
	"error_message" text,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"key_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "parts" ADD CONSTRAINT "parts_message_pk_messages_pk_fk" FOREIGN KEY ("message_pk") REFERENCES "public"."messages"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "parts" ADD CONSTRAINT "parts_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "compaction_steps" ADD CONSTRAINT "compaction_steps_compaction_id_compactions_id_fk" FOREIGN KEY ("compaction_id") REFERENCES "public"."compactions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "compactions" ADD CONSTRAINT "compactions_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_tenant_id_uq" ON "sessions" USING btree ("tenant_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_session_seq_uq" ON "messages" USING btree ("session_pk","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_session_id_uq" ON "messages" USING btree ("session_pk","id");--> statement-breakpoint
CREATE INDEX "messages_session_usage_idx" ON "messages" USING btree ("session_pk","seq") WHERE "messages"."usage_input" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "parts_message_idx_uq" ON "parts" USING btree ("message_pk","idx");--> statement-breakpoint
CREATE UNIQUE INDEX "parts_message_call_uq" ON "parts" USING btree ("message_pk","call_id") WHERE "parts"."call_id" is not null;--> statement-breakpoint
CREATE INDEX "parts_session_seq_idx" ON "parts" USING btree ("session_pk","seq");--> statement-breakpoint
CREATE INDEX "compaction_steps_compaction_idx" ON "compaction_steps" USING btree ("compaction_id","pk");--> statement-breakpoint
CREATE UNIQUE INDEX "compactions_one_active_per_session_uq" ON "compactions" USING btree ("session_pk") WHERE "compactions"."status" in ('pending', 'running');--> statement-breakpoint
CREATE INDEX "compactions_session_completed_idx" ON "compactions" USING btree ("session_pk","finished_at") WHERE "compactions"."status" = 'completed';--> statement-breakpoint
CREATE INDEX "compactions_session_requested_idx" ON "compactions" USING btree ("session_pk","requested_at");--> statement-breakpoint
CREATE UNIQUE INDEX "compactions_session_idempotency_uq" ON "compactions" USING btree ("session_pk","idempotency_key") WHERE "compactions"."idempotency_key" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_uq" ON "api_keys" USING btree ("key_hash");