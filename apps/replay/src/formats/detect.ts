/**
 * Reads a transcript file in any supported format: detects the format from its content (not its
 * name), and names the line that does not parse.
 *
 * - a JSON array of Chat Completions messages, or `{ "messages": [...] }` in a `.json` file;
 * - JSONL of `{ "messages": [...] }`, one session per line: API messages (`parts`) or Chat
 *   Completions messages (`content`);
 * - a Claude Code session (JSONL of entries with `sessionId` / `parentUuid`);
 * - a Codex CLI rollout (JSONL of `{ timestamp, type, payload }`, or a legacy rollout).
 */
import { basename } from 'node:path';
import { isObject, TranscriptError, type Transcript } from '../transcript';
import { fromChatMessages, isChatMessages } from './chat-completions';
import { fromClaudeCode, isClaudeCodeEntry } from './claude-code';
import { fromCodex, isCodexLine } from './codex';
import { apiMessages, isApiMessages } from './compactor';
import { parseJsonLines, type JsonLine } from './json-lines';

/** One session of `{ messages }`: API messages or Chat Completions messages. */
function fromMessagesRecord(
  record: Record<string, unknown>,
  file: string,
  key: string,
  line: number | null,
): Transcript {
  const messages = record.messages;
  if (isApiMessages(messages)) {
    return { key, file, format: 'compactor', messages: apiMessages(messages, file, line) };
  }
  if (isChatMessages(messages)) return fromChatMessages(messages, file, key, line);
  throw new TranscriptError(
    file,
    line,
    '"messages" is neither API messages (role + parts) nor Chat Completions messages (role + content)',
  );
}

function wholeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Every session in a file's text; `file` names it in errors and keys. */
export function parseTranscriptText(text: string, file: string): Transcript[] {
  const name = basename(file);
  if (text.trim() === '') throw new TranscriptError(file, null, 'the file is empty');
  const whole = wholeJson(text);
  if (Array.isArray(whole)) {
    if (isChatMessages(whole)) return [fromChatMessages(whole, file, name, null)];
    if (isApiMessages(whole))
      return [{ key: name, file, format: 'compactor', messages: apiMessages(whole, file, null) }];
    throw new TranscriptError(file, null, 'a JSON array, but not of Chat Completions or API messages');
  }
  if (isObject(whole) && 'messages' in whole && text.trim().split('\n').length > 1) {
    // A pretty-printed `{ "messages": [...] }` document (a one-line one is JSONL below).
    return [fromMessagesRecord(whole, file, name, null)];
  }

  const lines = parseJsonLines(text, file);
  const first = lines[0]!;
  if (isObject(first.value) && 'messages' in first.value) {
    return lines.map(({ line, value }) => {
      if (!isObject(value) || !('messages' in value)) {
        throw new TranscriptError(file, line, 'expected { "messages": [...] } like the lines before it');
      }
      return fromMessagesRecord(value, file, lines.length === 1 ? name : `${name}:${line}`, line);
    });
  }
  const sample = lines.slice(0, 20).map((l) => l.value);
  if (sample.some(isCodexLine)) return [fromCodex(lines, file, name)];
  if (sample.some(isClaudeCodeEntry)) return [fromClaudeCode(lines, file, name)];
  throw new TranscriptError(
    file,
    first.line,
    'unrecognised transcript format: expected { "messages": [...] } lines, a Claude Code session, ' +
      'a Codex rollout, or a JSON array of Chat Completions messages',
  );
}

export type { JsonLine };
