import { describe, expect, it } from 'vitest';
import { SUMMARY_METADATA_TYPE, type Message } from '@compactor/core';
import type { MessageInput, SessionRow } from '@compactor/db';
import { textOf, useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';
import type { WorkflowResources } from './resources';

const w = useWorkflow();

/**
 * `turns` turns of a coding session after a system prompt: each request asks for a module (every
 * fifth states a constraint), the answer reads it (~1,500 characters) and edits another; a file
 * read late but modified early ranks as the newest modified one.
 */
function session(turns: number, from = 0): MessageInput[] {
  const messages: MessageInput[] =
    from === 0 ? [{ role: 'system', parts: [{ type: 'text', text: 'You are a coding agent.' }] }] : [];
  for (let turn = from; turn < from + turns; turn += 1) {
    const constraint = turn % 5 === 0 ? ` Never touch src/legacy-${turn}.ts.` : '';
    messages.push(
      {
        role: 'user',
        parts: [{ type: 'text', text: `Fix the failing test of module ${turn}.${constraint}` }],
      },
      {
        role: 'assistant',
        finish: 'tool-calls',
        parts: [
          { type: 'text', text: `Reading module ${turn}.` },
          {
            type: 'tool',
            callId: `read_${turn}`,
            tool: 'read',
            status: 'completed',
            input: { filePath: `src/module-${turn % 17}.ts` },
            output: `export const value${turn} = compute(${turn});\n`.repeat(40),
          },
          {
            type: 'tool',
            callId: `edit_${turn}`,
            tool: 'edit',
            status: 'completed',
            input: { filePath: `src/module-${(turn * 7) % 23}.ts` },
            output: 'applied',
          },
        ],
      },
      { role: 'assistant', finish: 'stop', parts: [{ type: 'text', text: `Module ${turn} passes.` }] },
    );
  }
  return messages;
}

/** What a compaction wrote, without ids and times: it must not depend on how the history was read. */
async function written(sessionPk: number) {
  const context = await w.context(sessionPk);
  const summary = context.messages.find((m) => m.summary && m.metadata['type'] === SUMMARY_METADATA_TYPE);
  return {
    summary: textOf(summary),
    files: summary?.metadata['readFiles'] && {
      read: summary.metadata['readFiles'],
      modified: summary.metadata['modifiedFiles'],
    },
    kept: context.messages.filter((m: Message) => !m.summary).map((m) => m.seq),
    tokens: context.tokens,
  };
}

/** Compacts `session` with these resources; the row, and the prompts the summarizer was sent. */
async function compact(resources: WorkflowResources, row: SessionRow, strategy?: 'truncate') {
  const from = w.stub.requests.length;
  const { compaction } = await requestCompaction(resources.db, row, {
    reason: 'manual',
    keepRecentTokens: 3_000,
    ...(strategy ? { strategy } : {}),
  });
  const result = await runCompaction(resources, compaction.id, { lastAttempt: true });
  expect(result.status).toBe('completed');
  const prompts = w.stub.requests.slice(from).map((r) => r.messages.map((m) => m.text));
  const { id, sessionPk, requestedAt, startedAt, progressAt, finishedAt, summaryMessageIds, ...rest } =
    result.compaction!;
  void [id, sessionPk, requestedAt, startedAt, progressAt, finishedAt, summaryMessageIds];
  return { row: rest, prompts };
}

/** The workflow's resources reading the covered history `window` messages at a time, and the largest read. */
function windowed(window: number) {
  const reads = { largest: 0, messages: 0, windows: 0 };
  const resources: WorkflowResources = {
    ...w.resources,
    historyWindow: {
      messages: window,
      onRead: (messages) => {
        reads.largest = Math.max(reads.largest, messages);
        reads.messages += messages;
        reads.windows += 1;
      },
    },
  };
  return { resources, reads };
}

describe('a compaction reads a long covered history window by window', () => {
  it('writes the summary it writes reading the history whole, holding at most a window of it', async () => {
    // A small window for the session, so the summary is written in several chunks.
    const options = { contextWindow: 16_000 };
    const whole = await w.seedSession(session(60), options);
    const paged = await w.seedSession(session(60), options);
    const { resources: wholeResources } = windowed(100_000);
    const { resources, reads } = windowed(7);

    const a = await compact(wholeResources, whole);
    const b = await compact(resources, paged);

    expect(b.prompts).toEqual(a.prompts);
    expect(a.prompts.length).toBeGreaterThan(2);
    expect(b.row).toEqual(a.row);
    expect(await written(paged.pk)).toEqual(await written(whole.pk));
    expect(reads.largest).toBe(7);
    // The tail back to a turn start, then the older messages twice: their file ops, counts and
    // requests, then the summarizer's chunks. Never the whole view at once.
    expect(reads.windows).toBeGreaterThan(20);
    expect(reads.messages).toBeLessThan(2 * 181 + 4 * 7);
  });

  it('the second compaction (after a summary) and the truncate strategy match too', async () => {
    const options = { contextWindow: 16_000 };
    const whole = await w.seedSession(session(40), options);
    const paged = await w.seedSession(session(40), options);
    const { resources: wholeResources } = windowed(100_000);
    const { resources, reads } = windowed(5);
    await compact(wholeResources, whole);
    await compact(wholeResources, paged);
    await w.append(whole, session(30, 40));
    await w.append(paged, session(30, 40));

    const a = await compact(wholeResources, whole);
    const b = await compact(resources, paged);
    expect(b.prompts).toEqual(a.prompts);
    expect(b.row).toEqual(a.row);
    expect(await written(paged.pk)).toEqual(await written(whole.pk));
    expect(reads.largest).toBe(5);

    await w.append(whole, session(30, 70));
    await w.append(paged, session(30, 70));
    const c = await compact(wholeResources, whole, 'truncate');
    const d = await compact(resources, paged, 'truncate');
    expect(d.row).toEqual(c.row);
    expect(await written(paged.pk)).toEqual(await written(whole.pk));
    expect((await written(paged.pk)).summary).toMatch(/\[Compacted \d+ messages/);
  });
});
