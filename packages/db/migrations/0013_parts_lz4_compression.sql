-- Large parts (a 30 MiB tool output, a pasted file) are compressed as TOAST stores them. With
-- Postgres's default, pglz, that cost ~1.1 s of one core per 42 MB value on this machine, while
-- lz4 took ~0.2 s for the same size on disk: on a small box the CPU a big append takes from every
-- other tenant's queries. Only new values use it; a server built without lz4 keeps pglz.
DO $$
BEGIN
  ALTER TABLE "parts" ALTER COLUMN "text" SET COMPRESSION lz4;
  ALTER TABLE "parts" ALTER COLUMN "tool_input" SET COMPRESSION lz4;
  ALTER TABLE "parts" ALTER COLUMN "tool_output" SET COMPRESSION lz4;
  ALTER TABLE "parts" ALTER COLUMN "tool_error" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 is not available on this server: large parts stay compressed with pglz';
END
$$;
