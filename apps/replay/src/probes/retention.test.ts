import { describe, expect, it } from 'vitest';
import type { MessageInput } from '@compactor/db';
import { haystack, mentions } from './mentions';
import { generateLongCodingSession } from '@compactor/testing/fixtures';
import { filesTouched, probeRetention, TranscriptFacts, type ContextMessage } from './retention';
import { constraints, firstGoal } from './user-facts';

const user = (text: string): MessageInput => ({ role: 'user', parts: [{ type: 'text', text }] });
const call = (tool: string, input: Record<string, unknown>, output = 'ok'): MessageInput => ({
  role: 'assistant',
  parts: [
    { type: 'tool', callId: `c-${tool}-${JSON.stringify(input)}`, tool, status: 'completed', input, output },
  ],
  finish: 'tool-calls',
});
const summaryMessage = (text: string): ContextMessage => ({
  role: 'assistant',
  summary: true,
  parts: [{ type: 'text', text }],
});
const kept = (role: string, text: string): ContextMessage => ({ role, parts: [{ type: 'text', text }] });

const GOAL = 'The nightly export crashes with an out-of-memory error on accounts with 200k invoices; fix it.';
const transcript: MessageInput[] = [
  user(`${GOAL} You must keep the CSV column order. Never load all invoices at once.`),
  call('Read', { file_path: 'src/export.ts' }),
  call('Edit', { file_path: 'src/export.ts', old_string: 'a', new_string: 'b' }),
  call('read_file', { path: 'src/csv.ts' }),
  call('apply_patch', { input: '*** Begin Patch\n*** Add File: src/stream.ts\n+x\n*** End Patch\n' }),
  call('Bash', { command: 'npm test' }),
  user("Now add a regression test. Don't touch the snapshot files."),
  call('Write', { file_path: 'test/export.test.ts', content: 'it()' }),
];

describe('user facts', () => {
  it('finds constraint sentences by their cue words', () => {
    expect(constraints(transcript).map((c) => [c.index, c.text, c.cues])).toEqual([
      [0, 'You must keep the CSV column order.', ['must']],
      [0, 'Never load all invoices at once.', ['never']],
      [6, "Don't touch the snapshot files.", ['do not']],
    ]);
  });

  it('takes the first request as the goal, clipped at a word boundary', () => {
    expect(firstGoal(transcript)).toEqual({
      index: 0,
      text: expect.stringMatching(/^The nightly export crashes/),
    });
    expect(firstGoal(transcript)!.text.length).toBeLessThanOrEqual(180);
  });
});

describe('mentions', () => {
  it('accepts a paraphrase that keeps the words and the cue, refuses one that drops the cue', () => {
    const summary = haystack(
      'Constraints: never load every invoice at once (stream them). Keep the CSV column order.',
    );
    expect(
      mentions(summary, 'Never load all invoices at once.', { coverage: 0.6, required: ['never'] }),
    ).toBe(true);
    const softened = haystack('We try to load invoices at once only when small.');
    expect(
      mentions(softened, 'Never load all invoices at once.', { coverage: 0.5, required: ['never'] }),
    ).toBe(false);
  });

  it("treats don't and do not alike", () => {
    expect(
      mentions(haystack('Do not touch the snapshot files.'), "Don't touch the snapshot files.", {
        coverage: 1,
      }),
    ).toBe(true);
  });
});

describe('files touched', () => {
  it("reads them as the session's ledger does: tools, patches, written ones first, no URL", () => {
    const fetched = call('WebFetch', { url: 'https://example.com/docs/export' });
    const files = filesTouched([...transcript.slice(0, 6), fetched]);
    expect(files).toHaveLength(3);
    expect(files.slice(0, 2)).toEqual(
      expect.arrayContaining([
        { path: 'src/export.ts', kind: 'modified' },
        { path: 'src/stream.ts', kind: 'created' },
      ]),
    );
    expect(files[2]).toEqual({ path: 'src/csv.ts', kind: 'read' });
  });
});

describe('probeRetention', () => {
  const faithful = [
    summaryMessage(
      [
        '## Goal',
        'Fix the nightly export: it crashes out of memory on accounts with 200k invoices.',
        '## Constraints',
        '- You must keep the CSV column order.',
        '- Never load all invoices at once.',
        '<modified-files>\nsrc/export.ts\nsrc/stream.ts\n</modified-files>',
        '<read-files>\nsrc/csv.ts\n</read-files>',
      ].join('\n'),
    ),
    kept('user', "Now add a regression test. Don't touch the snapshot files."),
  ];

  it('passes every probe when the summary keeps goal, constraints and files', () => {
    const probes = probeRetention({
      messages: transcript,
      compactedCount: 6,
      appendedCount: 7,
      context: faithful,
    });
    expect(probes.files.map((f) => f.named)).toEqual(['verbatim', 'verbatim', 'verbatim']);
    // The summary restates the goal in its own words: kept, but not verbatim.
    expect(probes.goal?.where).toBe('paraphrased');
    expect(probes.constraints.map((c) => c.where)).toEqual(['verbatim', 'verbatim', 'verbatim']);
    expect(probes.latestRequest).toEqual({
      text: "Now add a regression test. Don't touch the snapshot files.",
      where: 'verbatim',
    });
  });

  it('reports a constraint the summary deliberately lost, and a file it did not name', () => {
    const lossy = [
      summaryMessage(
        [
          '## Goal',
          'Fix the nightly export: it crashes out of memory on accounts with 200k invoices.',
          '## Constraints',
          '- You must keep the CSV column order.',
          '<modified-files>\nsrc/export.ts\n</modified-files>',
        ].join('\n'),
      ),
      faithful[1]!,
    ];
    const probes = probeRetention({
      messages: transcript,
      compactedCount: 6,
      appendedCount: 7,
      context: lossy,
    });
    expect(probes.constraints).toEqual([
      { text: 'You must keep the CSV column order.', where: 'verbatim' },
      { text: 'Never load all invoices at once.', where: null },
      { text: "Don't touch the snapshot files.", where: 'verbatim' },
    ]);
    expect(probes.files.filter((f) => f.named === null).map((f) => f.path)).toEqual([
      'src/stream.ts',
      'src/csv.ts',
    ]);
  });

  it('says the latest request is lost when it was only summarised, not kept verbatim', () => {
    const summarisedAway = [
      summaryMessage('The user asked for a regression test. Do not touch the snapshot files.'),
    ];
    const probes = probeRetention({
      messages: transcript,
      compactedCount: 7,
      appendedCount: 7,
      context: summarisedAway,
    });
    expect(probes.latestRequest?.where).toBeNull();
    expect(probes.goal?.where).toBeNull();
  });

  it('only checks files touched before the boundary', () => {
    const probes = probeRetention({
      messages: transcript,
      compactedCount: 1,
      appendedCount: 8,
      context: faithful,
    });
    expect(probes.files).toEqual([]);
    expect(probes.latestRequest?.where).toBe('verbatim');
  });

  it('checks the facts the user stated so far, each once, verbatim or not', () => {
    const stated = [...transcript, user('Pin lodash to 4.17.21 and keep pages under 500 ms.')];
    const context = [kept('user', 'lodash 4.17.21 is pinned')];
    const probes = probeRetention({ messages: stated, compactedCount: 6, appendedCount: 9, context });
    expect(probes.facts).toEqual(
      expect.arrayContaining([
        { text: '4.17.21', where: 'verbatim' },
        { text: '500 ms', where: null },
      ]),
    );
    expect(new Set(probes.facts!.map((f) => f.text)).size).toBe(probes.facts!.length);
  });

  it('counts a word-bag match as paraphrased, never as verbatim', () => {
    // Every content word of the constraint, in the kept window, in another order.
    const shuffled = [kept('assistant', 'Invoices: load them in pages, never all at once.')];
    const probes = probeRetention({
      messages: transcript,
      compactedCount: 6,
      appendedCount: 7,
      context: shuffled,
    });
    expect(probes.constraints[1]).toEqual({ text: 'Never load all invoices at once.', where: null });
    const inSummary = [summaryMessage('Invoices: load them in pages, never all at once.')];
    const paraphrased = probeRetention({
      messages: transcript,
      compactedCount: 6,
      appendedCount: 7,
      context: inSummary,
    });
    expect(paraphrased.constraints[1]!.where).toBe('paraphrased');
  });

  it('takes the first request the user wrote as the goal, not a harness-only first message', () => {
    const harnessFirst = [
      user('<environment_context>\n  <cwd>/home/dev/app</cwd>\n</environment_context>'),
      ...transcript,
    ];
    // The context still holds the harness text verbatim, and the goal nowhere.
    const context = [
      kept('user', '<environment_context>\n  <cwd>/home/dev/app</cwd>\n</environment_context>'),
    ];
    const probes = probeRetention({ messages: harnessFirst, compactedCount: 1, appendedCount: 8, context });
    expect(probes.goal).toEqual({ text: expect.stringMatching(/^The nightly export crashes/), where: null });
  });

  it('names a file by its ledger group, its shared root written out, and reads tool inputs', () => {
    const ledger = summaryMessage(
      [
        'What this session touched (newest first):',
        '(…/ at the start of a path stands for /home/dev/app/)',
        'Files modified:',
        '- …/src/{export.ts, stream.ts}',
      ].join('\n'),
    );
    const call: ContextMessage = {
      role: 'assistant',
      parts: [{ type: 'tool', tool: 'read_file', input: { path: 'src/csv.ts' } }],
    };
    // The same session, its tools given absolute paths under the root the legend names.
    const absolute = transcript.map((m): MessageInput => {
      const part = m.parts[0];
      if (part?.type !== 'tool') return m;
      const input = part.input as Record<string, unknown> | undefined;
      if (typeof input?.file_path !== 'string') return m;
      return {
        ...m,
        parts: [{ ...part, input: { ...input, file_path: `/home/dev/app/${input.file_path}` } }],
      };
    });
    const probes = probeRetention({
      messages: absolute,
      compactedCount: 6,
      appendedCount: 7,
      context: [ledger, call],
    });
    expect(Object.fromEntries(probes.files.map((f) => [f.path, f.named]))).toEqual({
      '/home/dev/app/src/export.ts': 'group',
      'src/stream.ts': null,
      'src/csv.ts': 'verbatim',
    });
  });
  it('names a file the ledger had no room to list by the directory it names for it', () => {
    const ledger = summaryMessage(
      [
        'What this session touched (newest first):',
        '(…/ at the start of a path stands for /home/dev/app/)',
        'Files not listed, by directory:',
        '- …/src/',
        'Not listed for space: 1 file (recall?kind=files).',
      ].join('\n'),
    );
    const absolute = transcript.map((m): MessageInput => {
      const part = m.parts[0];
      if (part?.type !== 'tool') return m;
      const input = part.input as Record<string, unknown> | undefined;
      if (typeof input?.file_path !== 'string') return m;
      return {
        ...m,
        parts: [{ ...part, input: { ...input, file_path: `/home/dev/app/${input.file_path}` } }],
      };
    });
    const probes = probeRetention({
      messages: absolute,
      compactedCount: 6,
      appendedCount: 7,
      context: [ledger],
    });
    expect(Object.fromEntries(probes.files.map((f) => [f.path, f.named]))).toEqual({
      '/home/dev/app/src/export.ts': 'directory',
      // Relative paths are under no directory the ledger wrote out.
      'src/stream.ts': null,
      'src/csv.ts': null,
    });
  });
});

describe('the facts a replay keeps across its compactions', () => {
  // Every file of the prefix, read from scratch by a fresh reader (what each probe did before).
  const touchedFromScratch = (messages: readonly MessageInput[]) =>
    new TranscriptFacts(messages).filesTouched(messages.length);

  it('give what reading each prefix from scratch gives, as the prefix grows and shrinks', () => {
    const session = generateLongCodingSession(600, { withUsage: true });
    const facts = new TranscriptFacts(session);
    // Files and constraints appear along the way, so the prefixes differ in both.
    expect(touchedFromScratch(session.slice(0, 10)).length).toBeLessThan(touchedFromScratch(session).length);
    expect(constraints(session.slice(0, 40)).length).toBeLessThan(constraints(session).length);
    for (const count of [0, 5, 6, 40, 180, 180, 350, 12, 90, 600, 700, 520]) {
      expect(facts.filesTouched(count)).toEqual(touchedFromScratch(session.slice(0, count)));
      expect(facts.constraints(count)).toEqual(constraints(session.slice(0, count)));
    }
  });
});
