import type { TestProject } from 'vitest/node';
import { resolveTestServices } from './services';

/**
 * Runs once per `vitest run`: finds Postgres and Redis (env, then the local defaults, then
 * testcontainers when a Docker engine is available) and hands their URLs to every test file.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const services = await resolveTestServices();
  project.provide('databaseUrl', services.databaseUrl);
  project.provide('redisUrl', services.redisUrl);
  return services.stop;
}

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    redisUrl: string;
  }
}
