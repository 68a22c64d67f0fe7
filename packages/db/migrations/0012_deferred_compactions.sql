CREATE TABLE "deferred_compactions" (
	"session_pk" bigint PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"reason" text NOT NULL,
	"max_active" integer NOT NULL,
	"deferred_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "deferred_compactions" ADD CONSTRAINT "deferred_compactions_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "deferred_compactions_tenant_idx" ON "deferred_compactions" USING btree ("tenant_id","deferred_at");