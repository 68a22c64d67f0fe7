-- The reconciler's sweep for pending drafts whose job is gone (queries/reconcile.ts
-- findPendingDraftsToCheck): pending rows oldest first, resumed after the last one checked,
-- never the ready or given-up ones.
CREATE INDEX "prepared_summaries_pending_idx" ON "prepared_summaries" USING btree ("requested_at","session_pk") WHERE "prepared_summaries"."status" = 'pending';
