-- The artifact ledger of everything a session's completed compactions covered (core ledger/):
-- one row per compaction, written by its finalize step as the previous completed compaction's
-- ledger merged with the range it covered. Its own table, not a column of `compactions`: the
-- ledger grows with the session, and the many reads of compaction rows never need it. A revert
-- needs no write here: the previous completed compaction's row is the one in force again.
-- `unlisted_constraints`: the user's constraints the summary's pinned section had no room for,
-- listed by `recall?kind=facts`.
CREATE TABLE "compaction_ledgers" (
	"compaction_id" text PRIMARY KEY NOT NULL,
	"session_pk" bigint NOT NULL,
	"ledger" jsonb NOT NULL,
	"unlisted_constraints" jsonb DEFAULT '[]'::jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "compaction_ledgers" ADD CONSTRAINT "compaction_ledgers_compaction_id_compactions_id_fk" FOREIGN KEY ("compaction_id") REFERENCES "public"."compactions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "compaction_ledgers" ADD CONSTRAINT "compaction_ledgers_session_pk_sessions_pk_fk" FOREIGN KEY ("session_pk") REFERENCES "public"."sessions"("pk") ON DELETE cascade ON UPDATE no action;
