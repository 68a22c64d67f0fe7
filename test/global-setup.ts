import type { TestProject } from 'vitest/node';
import '@compactor/testing';
import { prepareTemplateDatabase } from './template-database';
import { resolveTestServices } from './services';

/**
 * Runs once per `vitest run`: finds Postgres and Redis (env, then the local defaults, then
 * testcontainers when a Docker engine is available), migrates a template database that every
 * test file clones, and hands the URLs to the test files.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const services = await resolveTestServices();
  const template = await prepareTemplateDatabase(services.databaseUrl);
  project.provide('databaseUrl', services.databaseUrl);
  project.provide('templateDatabase', template.name);
  project.provide('testRunId', template.runId);
  project.provide('redisUrl', services.redisUrl);
  return async () => {
    await template.dropRunDatabases();
    await services.stop();
  };
}
