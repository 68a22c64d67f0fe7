import { afterAll, beforeAll, expect } from 'vitest';
import { createLlm } from '@compactor/llm';
import { startLlmStub, type LlmStub } from '@compactor/llm-stub';
import { runCompaction, silentLog, type SessionEvent, type WorkflowResources } from '@compactor/workflow';
import type { TestApi } from './api';

/** The LLM stub of a test file, and compactions run on it in this process as a worker runs them. */
export interface InProcessWorker {
  readonly stub: LlmStub;
  /**
   * Runs the compaction as a worker would, on its last try, and expects it completed; `resources`
   * replaces any of the worker's (the clock, a counter); `events` receives what it announces.
   */
  run(
    compactionId: string,
    options?: { resources?: Partial<WorkflowResources>; events?: SessionEvent[] },
  ): Promise<Awaited<ReturnType<typeof runCompaction>>>;
}

/** Starts the LLM stub for the file (beforeAll) and stops it (afterAll). Call at the top level. */
export function useInProcessWorker(api: TestApi): InProcessWorker {
  let stub: LlmStub | undefined;
  beforeAll(async () => {
    stub = await startLlmStub();
  });
  afterAll(async () => {
    await stub?.close();
  });
  const started = () => {
    if (!stub) throw new Error('useInProcessWorker(): the stub exists only inside tests and hooks');
    return stub;
  };
  return {
    get stub() {
      return started();
    },
    async run(compactionId, { resources = {}, events } = {}) {
      const result = await runCompaction(
        {
          db: api.database.db,
          llm: createLlm({ apiKey: 'stub', baseURL: started().url, timeoutMs: 10_000 }),
          clock: () => new Date(),
          log: silentLog,
          events: { publish: async (event) => void events?.push(event) },
          ...resources,
        },
        compactionId,
        { lastAttempt: true },
      );
      expect(result.status).toBe('completed');
      return result;
    },
  };
}
