/**
 * The replay's prompt-cache cost and trigger waits end to end: the embedded Compactor with an LLM
 * stub that answers after a fixed latency, the example session replayed as an Anthropic model's
 * agent under two variants given as policy files with overrides, and the figures checked against
 * what the transcript and the stub imply.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { useTestDatabase } from '@compactor/db/testing';
import { uniqueQueuePrefix } from '@compactor/testing';
import { parseOptions } from './options';
import { runReplay } from './replay';

const database = useTestDatabase();
const example = join(import.meta.dirname, '..', 'examples', 'coding-session.jsonl');
const STUB_LATENCY_MS = 300;

describe('npm run replay --model --summarizer-latency', () => {
  it(
    'prices every model call through the prompt cache and times the wait at each trigger',
    { timeout: 240_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'replay-cache-e2e-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const plain = join(dir, 'plain-pruning.json');
      const aware = join(dir, 'cache-aware.json');
      writeFileSync(plain, JSON.stringify({ preset: 'default', pruning: { cacheAware: false } }));
      writeFileSync(aware, JSON.stringify({ pruning: { cacheAware: true, cacheHorizonTurns: 5 } }));
      const { OPENAI_API_KEY: _k, OPENAI_BASE_URL: _u, ...env } = process.env;
      const options = parseOptions(
        [
          example,
          '--window',
          '16000',
          '--policy',
          plain,
          '--policy',
          aware,
          '--model',
          'claude-sonnet-4-5',
          '--summarizer-latency',
          String(STUB_LATENCY_MS),
          '--out',
          join(dir, 'report'),
        ],
        { ...env, REDIS_URL: inject('redisUrl') },
      );
      let printed = '';
      const { report } = await runReplay(
        options,
        { env, out: { write: (text: string) => (printed += text), isTTY: false } },
        { databaseUrl: database.url, recreate: false, queuePrefix: uniqueQueuePrefix('replay-cache') },
      );

      const transcript = (
        JSON.parse(readFileSync(example, 'utf8')) as {
          messages: { role: string; usage?: { output: number } }[];
        }
      ).messages;
      const assistants = transcript.filter((m) => m.role === 'assistant');
      const output = assistants.reduce((sum, m) => sum + (m.usage?.output ?? 0), 0);
      expect(report.target.llm).toBe(`stub (${STUB_LATENCY_MS} ms latency)`);
      expect(report.runs.map((r) => [r.variant.label, r.status, r.error])).toEqual([
        ['plain-pruning.json', 'completed', null],
        ['cache-aware.json', 'completed', null],
      ]);
      for (const run of report.runs) {
        const cache = run.promptCache!;
        // One priced call per assistant message; an explicit cache writes whatever it does not read.
        expect(cache).toMatchObject({
          model: 'claude-sonnet-4-5',
          calls: assistants.length,
          ttlFrom: 'consecutive',
          uncachedTokens: 0,
          outputTokens: output,
        });
        expect(cache.cacheReadTokens).toBeGreaterThan(0);
        expect(cache.cacheReadTokens + cache.cacheWriteTokens).toBe(cache.promptTokens);
        // claude-sonnet-4-5: 0.30 read, 3.75 write, 15 output USD per 1M tokens.
        const expected = (cache.cacheReadTokens * 0.3 + cache.cacheWriteTokens * 3.75 + output * 15) / 1e6;
        expect(cache.totalUsd).toBeCloseTo(expected, 7);
        expect(cache.noCacheUsd).toBeCloseTo((cache.promptTokens * 3 + output * 15) / 1e6, 7);

        // Every compaction the session summarised went through the slow stub, as the agent's
        // model: its wait from the crossing append's answer is at least the stub's latency.
        const summarized = run.compactions.filter((c) => c.outcome === 'summarized');
        expect(summarized.length).toBeGreaterThan(0);
        for (const c of summarized) {
          expect(c.llm?.model).toBe('claude-sonnet-4-5');
          expect(c.llm?.costUsd).toBeGreaterThan(0);
        }
        const waits = run.triggerWaits!;
        expect(waits.length).toBeGreaterThan(0);
        for (const wait of waits) expect(wait.waitMs).toBeGreaterThanOrEqual(STUB_LATENCY_MS);
        // Each wait is a compaction the run recorded: the first of its chain of follow-ups.
        const ids = new Set(run.compactions.map((c) => c.id));
        const followUps = new Set(run.compactions.map((c) => c.followedBy));
        for (const wait of waits)
          expect(ids.has(wait.compactionId) && !followUps.has(wait.compactionId)).toBe(true);
      }
      expect(printed).toMatch(/session\s+variant\s+calls\s+uncached\s+cache read\s+written/);
      expect(printed).toContain('as claude-sonnet-4-5 through the prompt cache');
    },
  );
});
