/**
 * Property tests for context assembly: random sessions (roles, interleaved text and tool parts,
 * every tool status, random pruning, call ids numbered per message as some providers do,
 * summaries of completed and failed compactions in any style) always give a context that
 * validates as Chat Completions messages, and natively except for the reused ids themselves.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assembleContext, latestCompletedCompaction } from './context';
import { validateContext } from './context-validation';
import type { CompactionBoundary, CompactionStatus, Message, Part, Role, ToolStatus } from './model';
import { toOpenAIMessages } from './openai-format';
import { buildSummaryMessages, type SummaryMessageStyle } from './summary-messages';
import { message } from './test-support/builders';

type PartSpec =
  | { kind: 'text' | 'reasoning'; text: string; tokens: number }
  | {
      kind: 'tool';
      tool: string;
      perMessageId: boolean;
      status: ToolStatus;
      pruned: boolean;
      input: unknown;
      output: string | null;
      tokens: number;
      outputTokens: number;
    }
  | { kind: 'file'; mime: string }
  | { kind: 'compaction'; auto: boolean };

const partSpec: fc.Arbitrary<PartSpec> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('text' as const),
      text: fc.string({ maxLength: 12 }),
      tokens: fc.nat(200),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('reasoning' as const),
      text: fc.string({ maxLength: 12 }),
      tokens: fc.nat(200),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('tool' as const),
      tool: fc.constantFrom('read', 'bash', 'Edit', 'apply_patch'),
      /** Numbered per message (`call_0` in every turn, as some providers do) instead of unique. */
      perMessageId: fc.boolean(),
      status: fc.constantFrom<ToolStatus>('pending', 'running', 'completed', 'error'),
      pruned: fc.boolean(),
      input: fc.oneof(
        fc.constant({ path: 'a.ts' }),
        fc.constant(undefined),
        fc.string({ maxLength: 8 }),
        fc.integer(),
        fc.constant('{"x":1}'),
      ),
      output: fc.option(fc.string({ maxLength: 12 })),
      tokens: fc.nat(2000),
      outputTokens: fc.nat(2000),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('file' as const),
      mime: fc.constantFrom('image/png', 'application/pdf'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('compaction' as const), auto: fc.boolean() }) },
);

const messageSpec = fc.record({
  role: fc.constantFrom<Role>('user', 'assistant', 'assistant', 'system'),
  parts: fc.array(partSpec, { maxLength: 6 }),
});

const compactionSpec = fc.record({
  status: fc.constantFrom<CompactionStatus>(
    'completed',
    'completed',
    'failed',
    'pending',
    'running',
    'skipped',
  ),
  style: fc.constantFrom<SummaryMessageStyle | 'none'>('opencode', 'user', 'system', 'none'),
  /** Where its summary messages sit in the history (fraction of its length). */
  position: fc.double({ min: 0, max: 1, noNaN: true }),
  /** Which message its boundary points at (fraction), or none. */
  boundary: fc.option(fc.double({ min: 0, max: 1.2, noNaN: true })),
  finishedAt: fc.option(fc.integer({ min: 0, max: 10_000 })),
});

const sessionSpec = fc.record({
  messages: fc.array(messageSpec, { maxLength: 25 }),
  compactions: fc.array(compactionSpec, { maxLength: 3 }),
  seqGaps: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 40, maxLength: 40 }),
  reverseInput: fc.boolean(),
  pinSystemMessages: fc.boolean(),
});

interface Session {
  messages: Message[];
  compactions: CompactionBoundary[];
  pinSystemMessages: boolean;
}

type SessionSpec = typeof sessionSpec extends fc.Arbitrary<infer T> ? T : never;

function buildSession(spec: SessionSpec): Session {
  let nextCall = 0;
  const toPart = (part: PartSpec, index: number): Part => {
    switch (part.kind) {
      case 'text':
      case 'reasoning':
        return { type: part.kind, text: part.text, tokens: part.tokens };
      case 'tool':
        return {
          type: 'tool',
          callId: part.perMessageId ? `call_${index}` : `unique_${nextCall++}`,
          tool: part.tool,
          status: part.status,
          input: part.input,
          output: part.status === 'completed' ? part.output : null,
          error: part.status === 'error' ? part.output : null,
          compactedAt: part.pruned ? '2025-01-01T00:00:00Z' : null,
          tokens: part.tokens,
          outputTokens: Math.min(part.outputTokens, part.tokens),
        };
      case 'file':
        return { type: 'file', mime: part.mime, filename: null, url: 'https://example.test/f', tokens: 5 };
      case 'compaction':
        return { type: 'compaction', auto: part.auto, tokens: 3 };
    }
  };
  // Ids `m<index>`; the seqs, with gaps, are set below once the summaries are in.
  const ordered: Omit<Message, 'seq'>[] = spec.messages.map((m, i) =>
    message(
      i,
      m.role,
      m.parts.map((part, index) => toPart(part, index)),
    ),
  );
  const summaryIds: string[][] = spec.compactions.map((c, i) => {
    if (c.style === 'none') return [];
    const written = buildSummaryMessages({
      style: c.style,
      summaryText: `summary ${i}`,
      compactionId: `c${i}`,
      auto: true,
      messagesCompacted: 3,
      createdAt: '2025-01-01T00:00:00Z',
    });
    ordered.splice(Math.floor(c.position * ordered.length), 0, ...written);
    return written.map((m) => m.id);
  });
  let seq = 0;
  const messages = ordered.map((m, i) => ({
    ...m,
    seq: (seq += spec.seqGaps[i % spec.seqGaps.length] ?? 1),
  }));
  const compactions = spec.compactions.map((c, i): CompactionBoundary => {
    const target = c.boundary === null ? null : messages[Math.floor(c.boundary * messages.length)];
    return {
      id: `c${i}`,
      status: c.status,
      boundarySeq: c.boundary === null ? null : (target?.seq ?? seq + 1),
      summaryMessageIds: summaryIds[i] ?? [],
      finishedAt: c.finishedAt === null ? null : new Date(c.finishedAt * 1000).toISOString(),
    };
  });
  return {
    messages: spec.reverseInput ? [...messages].reverse() : messages,
    compactions,
    pinSystemMessages: spec.pinSystemMessages,
  };
}

const sessions = sessionSpec.map(buildSession);

describe('assembleContext properties', () => {
  it('the context always validates, natively and as OpenAI messages, never starting with a tool result', () => {
    fc.assert(
      fc.property(sessions, ({ messages, compactions, pinSystemMessages }) => {
        const context = assembleContext(messages, compactions, { pinSystemMessages });
        // Natively a reused id is the only possible issue; the OpenAI rendering resolves it.
        const callIds = context.messages.flatMap((m) =>
          m.parts.flatMap((p) => (p.type === 'tool' ? [p.callId] : [])),
        );
        const native = validateContext(context.messages);
        expect(native.every((issue) => issue.kind === 'duplicate-call-id')).toBe(true);
        expect(native.length).toBe(callIds.length - new Set(callIds).size);
        const openai = toOpenAIMessages(context);
        expect(validateContext(openai)).toEqual([]);
        expect(openai.find((m) => m.role !== 'system')?.role).not.toBe('tool');
        // Raw stored messages too: the renderer applies pruning and interruption itself.
        expect(validateContext(toOpenAIMessages([...messages].sort((a, b) => a.seq - b.seq)))).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('hidden pinned system messages, the summary, then exactly the non-summary messages from the boundary on', () => {
    fc.assert(
      fc.property(sessions, ({ messages, compactions, pinSystemMessages }) => {
        const context = assembleContext(messages, compactions, { pinSystemMessages });
        const chosen = latestCompletedCompaction(compactions);
        const bySeq = [...messages].sort((a, b) => a.seq - b.seq);
        const summaries = (chosen?.summaryMessageIds ?? []).filter((id) => messages.some((m) => m.id === id));
        const summarySeqs = bySeq.filter((m) => summaries.includes(m.id)).map((m) => m.seq);
        const firstKept =
          chosen === undefined
            ? -Infinity
            : (chosen.boundarySeq ?? (summarySeqs.length === 0 ? Infinity : Math.max(...summarySeqs) + 1));
        const expectedTail = bySeq.filter((m) => !m.summary && m.seq >= firstKept).map((m) => m.id);
        const pinned = bySeq
          .filter((m) => pinSystemMessages && m.role === 'system' && !m.summary && m.seq < firstKept)
          .map((m) => m.id);

        expect(context.messages.map((m) => m.id)).toEqual([...pinned, ...summaries, ...expectedTail]);
        expect(context.compactionId).toBe(chosen?.id ?? null);
        expect(context.messages.every((m) => !m.summary || m.compactionId === chosen?.id)).toBe(true);
        const rendered = context.messages.flatMap((m) => m.parts);
        expect(context.tokens).toBe(rendered.reduce((total, part) => total + part.tokens, 0));
      }),
      { numRuns: 500 },
    );
  });

  it('never changes the stored messages (pruning is lazy deletion)', () => {
    fc.assert(
      fc.property(sessions, ({ messages, compactions }) => {
        const before = structuredClone(messages);
        toOpenAIMessages(assembleContext(messages, compactions));
        expect(messages).toEqual(before);
      }),
      { numRuns: 100 },
    );
  });
});
