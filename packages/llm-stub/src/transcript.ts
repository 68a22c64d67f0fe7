/**
 * Reads what the stub is asked: the labelled transcript core's `serializeTranscript` writes
 * (`[User]: …`, `[Assistant tool call]: read({...})`, `[Tool result]: …`), the previous summary
 * and file-op blocks around it, and the indexed message list of a topic-boundary request
 * (`[3] USER: …`). Lenient on purpose: an unknown label becomes an `other` entry, never an error.
 *
 * Only a line that opens with a bracket is structure: core escapes content that would (a
 * backslash before the bracket, core's `escapePromptData`). Labels and tags are found on the
 * escaped text; the text handed on is un-escaped, so the stub summarises what was written.
 */
import { unescapePromptData } from '@compactor/core';

export type EntryKind =
  | 'user'
  | 'assistant'
  | 'thinking'
  | 'tool-call'
  | 'tool-result'
  | 'tool-error'
  | 'summary'
  | 'system'
  | 'error'
  | 'attachment'
  | 'other';

export interface TranscriptEntry {
  kind: EntryKind;
  label: string;
  text: string;
  /** For `tool-call`: the tool name and its argument text as serialised (maybe truncated JSON). */
  tool?: string;
  args?: string;
}

/** A block label at the start of a line: `[User]: `, `[Assistant tool call]: `, `[User attached file: …]`. */
const LABEL = /(?:^|\n)\[([A-Za-z][^\]\n]{0,80})\](?::[ \t]?|(?=[ \t]*(?:\n|$)))/g;

function kindOfLabel(label: string): EntryKind {
  const normalised = label.trim().toLowerCase();
  if (normalised === 'user') return 'user';
  if (normalised === 'assistant') return 'assistant';
  if (normalised === 'assistant thinking') return 'thinking';
  if (normalised.includes('tool call')) return 'tool-call';
  if (normalised === 'tool result') return 'tool-result';
  if (normalised === 'tool error') return 'tool-error';
  if (normalised.startsWith('summary')) return 'summary';
  if (normalised === 'system') return 'system';
  if (normalised.endsWith(' error')) return 'error';
  if (normalised.includes('attached file')) return 'attachment';
  return 'other';
}

/** One regular-expression pass over the transcript: each label starts a block that runs to the next. */
export function parseTranscript(transcript: string): TranscriptEntry[] {
  const entries: TranscriptEntry[] = [];
  let previous: { label: string; textStart: number } | null = null;
  for (const match of transcript.matchAll(LABEL)) {
    if (previous !== null) {
      entries.push(makeEntry(previous.label, entryText(transcript.slice(previous.textStart, match.index))));
    }
    previous = { label: match[1] ?? '', textStart: match.index + match[0].length };
  }
  if (previous !== null)
    entries.push(makeEntry(previous.label, entryText(transcript.slice(previous.textStart))));
  return entries;
}

/** A block's text as written: it starts on its label's line. */
function entryText(block: string): string {
  return unescapePromptData(block, 'inline').trim();
}

function makeEntry(label: string, text: string): TranscriptEntry {
  const kind = kindOfLabel(label);
  if (kind !== 'tool-call') return { kind, label, text };
  const call = /^([\w.:-]+)\(([\s\S]*)\)?$/.exec(text);
  const args = call?.[2] ?? '';
  return { kind, label, text, tool: call?.[1] ?? text, args: args.endsWith(')') ? args.slice(0, -1) : args };
}

const sectionPattern = (tag: string): RegExp =>
  new RegExp(`(?:^|\\n)<${tag}>\\n([\\s\\S]*?)\\n</${tag}>(?=\\n|$)`);

/**
 * Text of the first `<tag>` … `</tag>` block whose tags stand on their own lines, as core's prompt
 * writes them; mentions of the tag inside prose ("the transcript in <conversation>") are skipped.
 */
export function taggedSection(text: string, tag: string): string | null {
  const block = sectionPattern(tag).exec(text);
  return block?.[1] === undefined ? null : block[1].trim();
}

/** `text` without the block {@link taggedSection} finds. */
export function withoutSection(text: string, tag: string): string {
  return text.replace(sectionPattern(tag), '\n');
}

/**
 * Paths listed one per line in the `<read-files>` / `<modified-files>` blocks of a prompt, tags on
 * lines of their own as core writes them (an escaped tag quoted in a summary is not a block).
 */
export function pathsInBlock(text: string, tag: 'read-files' | 'modified-files'): string[] {
  const paths: string[] = [];
  const pattern = new RegExp(`(?:^|\\n)<${tag}>\\n([\\s\\S]*?)\\n</${tag}>(?=\\n|$)`, 'g');
  for (const match of text.matchAll(pattern)) {
    for (const line of (match[1] ?? '').split(/\r?\n/)) {
      const path = unescapePromptData(line, 'line-start').trim();
      if (path !== '') paths.push(path);
    }
  }
  return paths;
}

export interface IndexedMessage {
  index: number;
  role: string;
  text: string;
}

const INDEXED_LINE = /^\[(\d+)\]\s*([A-Za-z]+)\s*:\s?/;

/** The `[N] ROLE: text` list of a topic-boundary request (the topic reference's format). */
export function parseIndexedMessages(text: string): IndexedMessage[] {
  const messages: IndexedMessage[] = [];
  for (const line of text.split(/\r?\n/)) {
    const match = INDEXED_LINE.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) {
      messages.push({
        index: Number(match[1]),
        role: match[2].toLowerCase(),
        text: line.slice(match[0].length),
      });
    } else if (messages.length > 0) {
      const last = messages[messages.length - 1];
      if (last) last.text += `\n${line}`;
    }
  }
  // A message's text starts on its `[N] ROLE:` line; its lines that open with a bracket are core's own.
  return messages.map((message) => ({ ...message, text: unescapePromptData(message.text, 'inline').trim() }));
}
