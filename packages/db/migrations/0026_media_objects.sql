-- The bytes of media parts, stored once per tenant by their SHA-256 (db schema/media-objects.ts):
-- a file part posted as a data: URL keeps a reference to its row instead of the bytes, so the
-- context view, the status and the summarizer's reads never carry an image they do not serve.
-- Images are compressed already: EXTERNAL storage keeps them out of line without a pglz attempt.
CREATE TABLE IF NOT EXISTS "media_objects" (
  "tenant_id" text NOT NULL,
  "sha256" text NOT NULL,
  "mime" text NOT NULL,
  "size_bytes" integer NOT NULL,
  "width" integer,
  "height" integer,
  "pages" integer,
  "data" bytea NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT "media_objects_pk" PRIMARY KEY ("tenant_id", "sha256")
);
--> statement-breakpoint
ALTER TABLE "media_objects" ALTER COLUMN "data" SET STORAGE EXTERNAL;
