// What test/global-setup.ts hands to every test file through vitest's `inject()`.
declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the test Postgres server; each test file clones its own database on it. */
    databaseUrl: string;
    /** Migrated template database, cloned per test file. */
    templateDatabase: string;
    /** Names this run's databases, so teardown can drop what crashed files left behind. */
    testRunId: string;
    redisUrl: string;
  }
}
export {};
