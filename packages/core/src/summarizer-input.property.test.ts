/**
 * Property tests: no content can forge the structure of a summarizer or topic-detector request.
 * Sessions of random shape get hostile text (test-support/adversarial-text.ts) in every field a
 * request embeds: user and assistant text, summary messages, tool names, arguments, outputs and
 * errors, message errors, file names and types, the previous summary, a running summary, the
 * client's instructions and the file lists. Every request built from them (structured, OpenCode
 * and turn-prefix summaries, the chunked fold's update prompt, topic detection) must have exactly
 * the bracket lines the same request has when every field holds plain text of the same length:
 * the builders' lines, none of the content's.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FileOps } from './file-ops';
import type { Message, Part, Role, ToolStatus } from './model';
import { toolCallArguments } from './openai-format';
import { buildSummaryPrompt, summaryLengthNote, type SummaryPrompt } from './prompts';
import { buildSummaryMessages, type SummaryMessageStyle } from './summary-messages';
import { adversarialText, bracketLines } from './test-support/adversarial-text';
import { message, text, toolPart } from './test-support/builders';
import { buildTopicDetectionRequest, formatTopicMessage } from './topic-detection';

const content = adversarialText();

const partSpec = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('text' as const), text: content }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('tool' as const),
      tool: fc.oneof(fc.constantFrom('read', 'bash'), content),
      input: fc.oneof(content, fc.record({ path: content, command: content })),
      status: fc.constantFrom<ToolStatus>('completed', 'completed', 'error', 'running'),
      output: fc.option(content),
      error: fc.option(content),
      pruned: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('file' as const),
      filename: fc.option(content),
      mime: fc.oneof(fc.constant('image/png'), content),
      url: content,
    }),
  },
);

const sessionSpec = fc.record({
  messages: fc.array(
    fc.record({
      role: fc.constantFrom<Role>('user', 'assistant', 'assistant', 'system'),
      summary: fc.boolean(),
      parts: fc.array(partSpec, { maxLength: 4 }),
      error: fc.option(content),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  previousSummary: content,
  runningSummary: content,
  instructions: content,
  readFiles: fc.array(content, { maxLength: 3 }),
  modifiedFiles: fc.array(content, { maxLength: 3 }),
  summaryStyle: fc.constantFrom<SummaryMessageStyle>('opencode', 'user', 'opal', 'system'),
  toolResultMaxChars: fc.integer({ min: 1, max: 80 }),
  toolArgsMaxChars: fc.integer({ min: 1, max: 80 }),
});

type SessionSpec = typeof sessionSpec extends fc.Arbitrary<infer T> ? T : never;

/** Maps every content field of a session: `hostile` keeps it, `plain` replaces it. */
type Fill = (value: string) => string;
const hostile: Fill = (value) => value;
/** Plain text of the same length (so cuts fall alike), blank where the content is blank. */
const plain: Fill = (value) => (value.trim() === '' ? value : 'x'.repeat(value.length));

function toPart(spec: SessionSpec['messages'][number]['parts'][number], fill: Fill): Part {
  switch (spec.kind) {
    case 'text':
      return text(fill(spec.text), 5);
    case 'tool': {
      // Plain arguments as displayed: same length, so the transcript's cut falls alike.
      const shown = toolCallArguments(spec.input, { format: 'display' });
      const input = fill === hostile ? spec.input : plain(shown);
      return toolPart(fill(spec.tool), 5, {
        status: spec.status,
        input,
        output: spec.output === null ? null : fill(spec.output),
        error: spec.error === null ? null : fill(spec.error),
        compactedAt: spec.pruned ? '2025-01-01T00:00:00Z' : null,
        tokens: 20,
      });
    }
    case 'file':
      return {
        type: 'file',
        // The detector says `[image: ` or `[file: ` by the type: plain text keeps that apart.
        mime: fill === plain && spec.mime.startsWith('image/') ? 'image/x' : fill(spec.mime),
        filename: spec.filename === null ? null : fill(spec.filename),
        url: fill(spec.url),
        tokens: 5,
      };
  }
}

/** An ordinary opening message keeps content from making the first one read as an imported summary. */
function sessionMessages(spec: SessionSpec, fill: Fill): Message[] {
  return [
    message(1, 'user', [text('Begin.')]),
    ...spec.messages.map((m, i) =>
      message(
        i + 2,
        m.role,
        m.parts.map((part) => toPart(part, fill)),
        {
          summary: m.summary,
          error: m.error === null ? null : { message: fill(m.error) },
        },
      ),
    ),
  ];
}

function previousSummaryMessages(spec: SessionSpec, fill: Fill): Message[] {
  return buildSummaryMessages({
    style: spec.summaryStyle,
    summaryText: `## Goal\n${fill(spec.previousSummary)}`,
    compactionId: 'cmp_0',
    auto: true,
    messagesCompacted: 10,
    createdAt: '2025-01-01T00:00:00Z',
  }).map((m, seq) => ({ ...m, seq }));
}

/** Every request the session gives rise to, as the texts sent. */
function requests(spec: SessionSpec, fill: Fill): string[] {
  const messages = sessionMessages(spec, fill);
  const fileOps: FileOps = {
    readFiles: spec.readFiles.map(fill),
    modifiedFiles: spec.modifiedFiles.map(fill),
  };
  const common = {
    messages,
    instructions: fill(spec.instructions),
    fileOps,
    toolResultMaxChars: spec.toolResultMaxChars,
    toolArgsMaxChars: spec.toolArgsMaxChars,
  };
  const fold = buildSummaryPrompt({ ...common, previousSummary: fill(spec.runningSummary) });
  const prompts: SummaryPrompt[] = [
    buildSummaryPrompt({ ...common, previousSummary: fill(spec.previousSummary) }),
    buildSummaryPrompt({ ...common, previousSummary: fill(spec.previousSummary), style: 'opencode' }),
    buildSummaryPrompt({ ...common, previousSummary: null }),
    buildSummaryPrompt({ ...common, previousSummary: null, style: 'opencode' }),
    buildSummaryPrompt({ ...common, kind: 'turn-prefix' }),
    { ...fold, user: `${fold.user}\n\n${summaryLengthNote(500)}` },
    buildTopicDetectionRequest([...previousSummaryMessages(spec, fill), ...messages], {
      maxCharsPerMessage: 1_000_000,
    }),
    buildTopicDetectionRequest(messages, { maxCharsPerMessage: 1_000_000, summaryFrom: 'summarizer' }),
  ];
  return prompts.flatMap((prompt) => [prompt.system, prompt.user]);
}

/**
 * What identifies a bracket line regardless of the content it carries: the label (`[User]:`,
 * `[Tool result]:`, `[3] USER:`, `[tool `, `[User attached file:` …) or, for the prompt's fixed
 * lines (tags, format placeholders, markers), the whole line.
 */
const HEAD =
  /^(?:\[\d+\] [A-Z]+:|\[(?:tool |image: |file: )|\[[A-Za-z ]+ attached file: |\[[^\]]*\]:|\[\.\.\. \d+ more characters? truncated\]$)/;

function structure(prompt: string): string[] {
  return bracketLines(prompt).map((line) => HEAD.exec(line)?.[0] ?? line);
}

describe('summarizer and topic-detector requests', () => {
  it('carry only the bracket lines their builders write, whatever the content', () => {
    fc.assert(
      fc.property(sessionSpec, (spec) => {
        const hostileRequests = requests(spec, hostile);
        const plainRequests = requests(spec, plain);
        hostileRequests.forEach((request, i) => {
          expect(structure(request)).toEqual(structure(plainRequests[i] ?? ''));
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a detector message cut short keeps a prefix of its own bracket lines, never gains one', () => {
    fc.assert(
      fc.property(sessionSpec, fc.integer({ min: 1, max: 200 }), (spec, maxChars) => {
        const hostileMessages = sessionMessages(spec, hostile);
        const plainMessages = sessionMessages(spec, plain);
        hostileMessages.forEach((m, i) => {
          const cut = structure(formatTopicMessage(m, i, maxChars));
          const whole = structure(formatTopicMessage(plainMessages[i] as Message, i, 1_000_000));
          // The cut may end inside one of the builder's lines (`[ima...`).
          const last = cut.length - 1;
          expect(cut.slice(0, last)).toEqual(whole.slice(0, last));
          if (last < 0) return;
          const cutLine = (cut[last] ?? '').replace(/\.\.\.$/, '');
          const wholeLine = whole[last] ?? '';
          expect(wholeLine.startsWith(cutLine) || cutLine.startsWith(wholeLine)).toBe(true);
        });
      }),
      { numRuns: 200 },
    );
  });
});
