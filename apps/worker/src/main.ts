/**
 * `npm run worker`: parses the environment, then runs compaction and prune jobs until
 * SIGTERM/SIGINT, when it stops taking jobs and drains running ones (bounded by
 * SHUTDOWN_TIMEOUT_MS; what it cancels resumes on another worker).
 */
import pino from 'pino';
import { parseWorkerEnv, type WorkerEnv } from './env';
import { startWorkerProcess } from './worker';

let env: WorkerEnv;
try {
  env = parseWorkerEnv();
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
const log = pino({ level: env.LOG_LEVEL, name: 'compactor-worker' });

startWorkerProcess(env, log)
  .then((worker) => {
    let stopping = false;
    const shutdown = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down: draining jobs');
      worker
        .stop()
        .then(({ drained }) => {
          log.info({ drained }, 'stopped');
          process.exit(0);
        })
        .catch((error: Error) => {
          log.error({ err: error.message }, 'shutdown failed');
          process.exit(1);
        });
    };
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGINT', () => shutdown('SIGINT'));
  })
  .catch((error: Error) => {
    log.fatal({ err: error.message }, error.message);
    process.exit(1);
  });
