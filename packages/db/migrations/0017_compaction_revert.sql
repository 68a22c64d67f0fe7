-- Undoing a compaction (`POST /v1/compactions/{id}/revert`). A reverted compaction keeps its row,
-- its sizes and its step records (what it did and cost); `status = 'reverted'` takes it out of
-- the context view's rule (the latest `completed` compaction, and the partial index that serves
-- it), so the one before it defines the view again; `reverted_at` says when. `status` is plain
-- text (no check constraint): the new value needs no DDL, and the analytics views show it as is.
ALTER TABLE "compactions" ADD COLUMN "reverted_at" timestamp with time zone;--> statement-breakpoint
-- Usage reports after `served_from_seq` (its last summary) up to `reverted_seq` (the session's
-- last seq at the revert) were measured on the view the revert undid: the hybrid estimate does
-- not calibrate on them.
ALTER TABLE "compactions" ADD COLUMN "served_from_seq" integer;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "reverted_seq" integer;--> statement-breakpoint
-- The status statement reads a session's newest revert in one probe.
CREATE INDEX "compactions_session_reverted_idx" ON "compactions" USING btree ("session_pk","reverted_seq" DESC NULLS LAST,"served_from_seq") WHERE "compactions"."status" = 'reverted';--> statement-breakpoint
-- A clamp that replaces an earlier compaction's clamp of the same part keeps that one here (the
-- whole row as jsonb, its own `previous` included), so reverting the newer compaction puts the
-- earlier clamp back. Null: the part was not clamped before (or was, before this column existed).
ALTER TABLE "part_clamps" ADD COLUMN "previous" jsonb;--> statement-breakpoint
-- A revert finds the clamps its compaction wrote without reading every session's.
CREATE INDEX "part_clamps_clamped_by_idx" ON "part_clamps" USING btree ("clamped_by");
