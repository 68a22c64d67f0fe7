// For in-process use (tests, benchmarks): the worker's composition root and its parts.
export { startWorkerProcess, type WorkerProcess } from './worker';
export { parseWorkerEnv, WorkerEnvSchema, type WorkerEnv } from './env';
