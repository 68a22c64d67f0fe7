-- The per-tenant cap on active compactions (TENANT_MAX_ACTIVE_COMPACTIONS in the API) counts a
-- tenant's pending and running compactions before it starts another. Through `sessions` that
-- count reads every session the tenant has (or every active compaction of every tenant); with
-- the tenant on the row, a partial index holds only active compactions by tenant, and the count,
-- stopped at the cap, reads at most that many entries.
ALTER TABLE "compactions" ADD COLUMN "tenant_id" text;--> statement-breakpoint
UPDATE "compactions" c SET "tenant_id" = s."tenant_id" FROM "sessions" s WHERE s."pk" = c."session_pk";--> statement-breakpoint
ALTER TABLE "compactions" ALTER COLUMN "tenant_id" SET NOT NULL;--> statement-breakpoint
CREATE INDEX "compactions_tenant_active_idx" ON "compactions" USING btree ("tenant_id") WHERE "compactions"."status" in ('pending', 'running');
