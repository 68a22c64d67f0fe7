import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LISTED_FILES, SUMMARY_METADATA_TYPE, type SummaryRepair } from '@compactor/core';
import { listCompactionSteps, type MessageInput } from '@compactor/db';
import { textOf, useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();
afterEach(() => w.stub.setFaults({}));

const GOAL =
  'Add a --dry-run flag to scripts/migrate-billing.ts that prints the SQL it would run, with row counts.';
const CONSTRAINT = 'Never run the migration against production.';
const FILES = ['scripts/migrate-billing.ts', 'src/db/client.ts', 'test/migrate-billing.test.ts'];

let call = 0;
const tool = (name: string, path: string, output: string) => ({
  type: 'tool' as const,
  callId: `call_${++call}`,
  tool: name,
  status: 'completed' as const,
  input: { filePath: path },
  output,
});
const userSays = (text: string): MessageInput => ({ role: 'user', parts: [{ type: 'text', text }] });
const assistantDoes = (parts: MessageInput['parts']): MessageInput => ({
  role: 'assistant',
  finish: 'tool-calls',
  parts,
});

/** About 2,000 tokens of source, so a compaction has something to shrink. */
const source = (name: string) =>
  Array.from(
    { length: 120 },
    (_, i) => `${String(i + 1).padStart(4)}\texport const ${name}${i} = await db.query(sql${i});`,
  ).join('\n');

/** A session whose first request is the goal and whose second states the constraint. */
function migrationSession(): MessageInput[] {
  return [
    userSays(GOAL),
    assistantDoes([
      { type: 'text', text: 'Reading the script and the database client.' },
      tool('read', FILES[0]!, source('step')),
      tool('read', FILES[1]!, source('pool')),
    ]),
    userSays(`${CONSTRAINT} Use the staging database (STAGING_DATABASE_URL) for every try.`),
    assistantDoes([tool('edit', FILES[0]!, 'ok'), tool('write', FILES[2]!, 'ok')]),
    { role: 'assistant', finish: 'stop', parts: [{ type: 'text', text: 'The flag prints 14 statements.' }] },
    userSays('Also print how long each statement would lock its table.'),
    { role: 'assistant', finish: 'stop', parts: [{ type: 'text', text: 'Added lock estimates.' }] },
  ];
}

/** The summary message the context view serves right after the boundary. */
async function servedSummary(sessionPk: number): Promise<string> {
  const context = await w.context(sessionPk);
  return textOf(context.messages.find((m) => m.summary && m.metadata['type'] === SUMMARY_METADATA_TYPE));
}

const summaryCheck = (details: unknown) => (details as { summaryCheck: SummaryRepair }).summaryCheck;

describe('verified summaries', () => {
  it('pins the goal, the constraint and the files a summary dropped, and records the repair as counts', async () => {
    const session = await w.seedSession(migrationSession());
    w.stub.setFaults({ output: 'drop-everything' });
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 30,
      instructions: 'keep the staging URL variable name',
    });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

    expect(result.status).toBe('completed');
    const summary = await servedSummary(session.pk);
    expect(summary).toContain('Continue the current task.');
    expect(summary).toContain(GOAL);
    expect(summary).toContain(CONSTRAINT);
    expect(summary).toContain('keep the staging URL variable name');
    for (const path of FILES) expect(summary).toContain(path);
    const check = summaryCheck(result.compaction!.details);
    expect(check).toMatchObject({
      required: { goal: 1, constraints: 1, instructions: 1 },
      repaired: { goal: 1, constraints: 1, instructions: 1 },
      files: { listed: 3, notListed: 0 },
    });
    const steps = await listCompactionSteps(w.resources.db, compaction.id);
    // The summarize step's record holds its outcome, the check with it.
    const detail = steps.find((s) => s.step === 'summarize')!.detail;
    expect(summaryCheck((detail as { detail: unknown }).detail)).toEqual(check);
    // Numbers and labels only: none of the pinned words reach the records.
    expect(JSON.stringify([detail, result.compaction!.details])).not.toMatch(/migration|staging|dry-run/i);
  });

  it('carries them through a second compaction once, without a second pinned section', async () => {
    const session = await w.seedSession(migrationSession());
    w.stub.setFaults({ output: 'drop-everything' });
    const first = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 30,
    });
    await runCompaction(w.resources, first.compaction.id, { lastAttempt: true });
    await w.append(session, [
      userSays("Don't print connection strings, they hold passwords."),
      assistantDoes([tool('read', 'src/db/pool.ts', source('conn')), tool('edit', FILES[0]!, 'ok')]),
      userSays('Now run it once on staging.'),
      {
        role: 'assistant',
        finish: 'stop',
        parts: [{ type: 'text', text: 'Ran on staging: 14 statements.' }],
      },
    ]);
    const second = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 30,
    });
    const result = await runCompaction(w.resources, second.compaction.id, { lastAttempt: true });

    expect(result.status).toBe('completed');
    const summary = await servedSummary(session.pk);
    expect(summary.match(/<pinned>/g)).toHaveLength(1);
    expect(summary.split(GOAL)).toHaveLength(2);
    expect(summary.split(CONSTRAINT)).toHaveLength(2);
    expect(summary).toContain("Don't print connection strings, they hold passwords.");
    expect(summaryCheck(result.compaction!.details).required.goal).toBe(1);
  });

  it('pins the same words in the truncate text when the summarizer fails for good', async () => {
    const session = await w.seedSession(migrationSession());
    w.stub.setFaults({ status: 500 });
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 30,
    });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

    expect(result.status).toBe('completed');
    expect(result.compaction!.details).toMatchObject({ writtenBy: 'truncate' });
    const summary = await servedSummary(session.pk);
    expect(summary).toMatch(/\[Compacted \d+ messages: /);
    expect(summary).toContain(GOAL);
    expect(summary).toContain(CONSTRAINT);
    for (const path of FILES) expect(summary).toContain(path);
    expect(summaryCheck(result.compaction!.details).repaired).toMatchObject({ goal: 1, constraints: 1 });
  });
});

describe('bounded file lists', () => {
  it('a session that read 8,000 files gets bounded metadata, ledger block and context, newest files kept', async () => {
    /** 4,000 reads of distinct files, 50 a message, numbered from `from`. */
    const reads = (from: number): MessageInput[] =>
      Array.from({ length: 80 }, (_, m) =>
        assistantDoes(
          Array.from({ length: 50 }, (_, p) =>
            tool('read', `packages/app/src/feature-${from + m * 50 + p}/index.ts`, 'ok'),
          ),
        ),
      );
    const compact = async () => {
      const { compaction } = await requestCompaction(w.resources.db, session, {
        reason: 'manual',
        strategy: 'truncate',
        keepRecentTokens: 10,
      });
      expect((await runCompaction(w.resources, compaction.id, { lastAttempt: true })).status).toBe(
        'completed',
      );
    };
    const session = await w.seedSession([
      userSays('Index every feature module.'),
      ...reads(0),
      userSays('Next.'),
    ]);
    await compact();
    // The second compaction merges the first one's lists with 4,000 newer reads.
    await w.append(session, [...reads(4_000), userSays('Next.')]);
    await compact();

    const context = await w.context(session.pk);
    const summary = context.messages.find((m) => m.metadata['type'] === SUMMARY_METADATA_TYPE)!;
    const readFiles = summary.metadata['readFiles'] as string[];
    expect(readFiles).toHaveLength(MAX_LISTED_FILES);
    expect(readFiles[0]).toBe('packages/app/src/feature-7999/index.ts');
    expect(summary.metadata['readFilesOmitted']).toBe(8_000 - MAX_LISTED_FILES);
    // The text shows the ledger within its share, newest first; the rest is named with its recall call.
    expect(textOf(summary)).toContain('…/feature-7999/index.ts');
    expect(textOf(summary)).toMatch(/Not listed for space: [\d,]+ files \(recall\?kind=files\)/);
    // The native context a client fetches every turn: about 10 KB, not the 400 KB of every path.
    expect(JSON.stringify(summary.metadata).length).toBeLessThan(5_000);
    expect(JSON.stringify(context).length).toBeLessThan(12_000);
  });
});
