-- Media objects no part refers to any more (their session deleted, their parts purged by
-- retention) are removed by the retention job (db media/orphans.ts). "Does any part refer to
-- this object" is one lookup of this index: the hash inside a stored reference
-- (`compactor-media:sha256:<hex>;…`, characters 24 to 87), for file parts that hold one.
CREATE INDEX IF NOT EXISTS "parts_media_sha_idx" ON "parts" USING btree ((substr("url", 24, 64)))
  WHERE "type" = 'file' AND "url" LIKE 'compactor-media:%';
--> statement-breakpoint
-- When the bytes were last stored or posted again (db storeMediaObjects): an object posted again
-- while its last reference is being removed is younger than the collector's grace, so the part
-- about to refer to it never loses it.
ALTER TABLE "media_objects" ADD COLUMN IF NOT EXISTS "stored_at" timestamp with time zone DEFAULT now() NOT NULL;
