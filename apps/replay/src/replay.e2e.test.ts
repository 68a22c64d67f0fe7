/**
 * `compactor replay` end to end: the embedded Compactor (API, worker and LLM stub as processes) on
 * this file's own database, the bundled example session and a Claude Code session replayed turn by
 * turn, and the outputs (terminal table, report.json, report.html) checked against what happened.
 */
import { existsSync, mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { useTestDatabase } from '@compactor/db/testing';
import { uniqueQueuePrefix } from '@compactor/testing';
import { parseOptions } from './options';
import type { ReplayReport } from './report/model';
import { runReplay } from './replay';

const database = useTestDatabase();
const app = join(import.meta.dirname, '..');

describe('npm run replay', () => {
  it(
    'replays the example session and a Claude Code session and reports what survived',
    { timeout: 240_000 },
    async () => {
      const outDir = mkdtempSync(join(tmpdir(), 'replay-e2e-'));
      onTestFinished(() => rmSync(outDir, { recursive: true, force: true }));
      // No provider in the environment: the embedded Compactor uses the bundled stub.
      const { OPENAI_API_KEY: _k, OPENAI_BASE_URL: _u, ...env } = process.env;
      const options = parseOptions(
        [
          join(app, 'examples', 'coding-session.jsonl'),
          join(app, 'fixtures', 'claude-code-session.jsonl'),
          '--window',
          '16000',
          '--policy',
          'opencode',
          '--policy',
          'klaude',
          '--concurrency',
          '4',
          '--out',
          outDir,
        ],
        { ...env, REDIS_URL: inject('redisUrl') },
      );
      let printed = '';
      const { report, jsonPath, htmlPath } = await runReplay(
        options,
        { env, out: { write: (text: string) => (printed += text), isTTY: false } },
        { databaseUrl: database.url, recreate: false, queuePrefix: uniqueQueuePrefix('replay') },
      );

      expect(report.runs.map((r) => [r.transcript, r.variant.label, r.status, r.error])).toEqual([
        ['coding-session.jsonl', 'opencode', 'completed', null],
        ['coding-session.jsonl', 'klaude', 'completed', null],
        ['claude-code-session.jsonl#7f3c2a91', 'opencode', 'completed', null],
        ['claude-code-session.jsonl#7f3c2a91', 'klaude', 'completed', null],
      ]);
      for (const run of report.runs) {
        // Every message appended, turn by turn, and the session compacted at least once.
        expect(run.points.map((p) => p.turn)).toEqual(run.points.map((_, i) => i + 1));
        expect(run.points).toHaveLength(run.messages);
        const done = run.compactions.filter((c) => c.outcome === 'summarized');
        expect(done.length).toBeGreaterThan(0);
        for (const c of done) {
          expect(c.tokensAfter!).toBeLessThan(c.tokensBefore!);
          expect(c.context).toMatchObject({ valid: true, issues: [], withinWindow: true });
          expect(c.llm?.model).toBe('stub-summarizer');
          expect(c.latencyMs).toBeGreaterThanOrEqual(0);
          // The stub keeps the first request, must/never sentences and the touched files.
          expect(c.retention!.goal?.where).not.toBeNull();
          expect(c.retention!.files.length).toBeGreaterThan(0);
          expect(c.retention!.files.every((f) => f.named !== null)).toBe(true);
          expect(c.retention!.constraints.every((k) => k.where !== null)).toBe(true);
          // Null would mean the recall route did not answer; what it looked up is what was not verbatim.
          expect(c.recall).not.toBeNull();
          expect(c.recall!.facts.every((f) => f.kind !== 'file')).toBe(true);
        }
        // After a compaction the context shrank below the window again.
        expect(run.points.at(-1)!.tokens).toBeLessThan(run.usable);
      }

      const saved = JSON.parse(readFileSync(jsonPath, 'utf8')) as ReplayReport;
      expect(saved.runs).toHaveLength(4);
      expect(saved.target).toMatchObject({ kind: 'embedded', llm: 'stub (zero latency)' });
      const html = readFileSync(htmlPath, 'utf8');
      expect(html.match(/<svg class="chart"/g)).toHaveLength(2);
      expect(html).toContain('<h3>Side by side</h3>');
      expect(existsSync(join(outDir, 'report.html'))).toBe(true);
      expect(printed).toMatch(/session\s+variant\s+msgs\s+compactions/);
      expect(printed).toMatch(/coding-session\.jsonl\s+opencode\s+29\s+\d+ summarized/);
      expect(printed).toContain(`wrote ${htmlPath}`);
    },
  );
});
