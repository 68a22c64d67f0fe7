// The worker thread's entry: the project runs its TypeScript through tsx (no build step), and a
// worker thread does not inherit the loader the main thread was started with under every runner.
import { tsImport } from 'tsx/esm/api';

await tsImport('./append-body-worker.ts', import.meta.url);
