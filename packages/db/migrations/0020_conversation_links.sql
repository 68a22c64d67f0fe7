-- The drop-in endpoints' hash chain (src/schema/conversation-links.ts): a request that resends
-- its whole message list finds its session as the longest stored prefix of its own chain.
CREATE TABLE "conversation_links" (
  "session_pk" bigint NOT NULL,
  "position" integer NOT NULL,
  "tenant_id" text NOT NULL,
  "chain_hash" bytea NOT NULL,
  "conversation_key" text,
  "message_id" text,
  "answer" boolean DEFAULT false NOT NULL,
  "raw_answer" jsonb,
  "created_at" timestamp with time zone NOT NULL,
  CONSTRAINT "conversation_links_session_pk_position_pk" PRIMARY KEY("session_pk","position")
);--> statement-breakpoint
ALTER TABLE "conversation_links" ADD CONSTRAINT "conversation_links_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "conversation_links_tenant_hash_idx" ON "conversation_links" USING btree ("tenant_id","chain_hash","session_pk");--> statement-breakpoint
CREATE INDEX "conversation_links_key_hash_idx" ON "conversation_links" USING btree ("tenant_id","conversation_key","chain_hash","session_pk") WHERE "conversation_links"."conversation_key" is not null;
