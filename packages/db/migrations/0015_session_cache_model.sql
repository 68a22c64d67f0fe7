-- A session's prompt-cache overrides (`model.pricing`, `model.cache`), as the client stated them:
-- null keeps the model catalog's value, resolved on use so the catalog can evolve.
ALTER TABLE "sessions" ADD COLUMN "model_pricing" jsonb;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "model_cache" jsonb;
