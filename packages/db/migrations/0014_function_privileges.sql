-- The append functions run with the privileges of whoever calls them and write any session's
-- messages: only the service's own role (their owner, the role that migrates) may execute them,
-- not every role of the database (PUBLIC has EXECUTE on a new function by default; an analyst
-- role given read access must not be able to append). Each also pins its search_path to the
-- schema it lives in, so a role that can create objects in a schema earlier on a caller's path
-- (a same-named table or operator) cannot redirect what the function reads and writes.
DO $$
DECLARE
  fn record;
BEGIN
  FOR fn IN
    SELECT p.oid::regprocedure AS signature, n.nspname AS schema
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE p.proname LIKE 'compactor\_%' AND n.nspname = current_schema()
  LOOP
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn.signature);
    EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', fn.signature, fn.schema);
  END LOOP;
END
$$;
--> statement-breakpoint
-- Functions a later migration creates start without PUBLIC's EXECUTE too.
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
