-- The reconciler's sweep for pending drafts whose job is gone (queries/reconcile.ts
-- findPendingDraftsToCheck): pending rows oldest first, never the ready or given-up ones.
CREATE INDEX "prepared_summaries_pending_idx" ON "prepared_summaries" USING btree ("requested_at") WHERE "prepared_summaries"."status" = 'pending';
