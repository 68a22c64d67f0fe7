/**
 * Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`): one entry per line,
 * `type` `user` or `assistant` with an Anthropic `message`; a streamed reply is several
 * `assistant` entries with the same `message.id` (one block each, usage repeated); tool results
 * come back as `tool_result` blocks of the next `user` entry. Sidechain (sub-agent) entries,
 * `isMeta` notes, summaries, snapshots and system entries are not part of the conversation.
 */
import type { Usage } from '@compactor/core';
import { isObject, TranscriptError, type Transcript } from '../transcript';
import type { JsonLine } from './json-lines';
import { MessageBuilder } from './message-builder';
import { contentText, count, timestamp } from './text';

function usageOf(raw: unknown): Usage | null {
  if (!isObject(raw)) return null;
  return {
    input: count(raw.input_tokens),
    output: count(raw.output_tokens),
    reasoning: 0,
    cacheRead: count(raw.cache_read_input_tokens),
    cacheWrite: count(raw.cache_creation_input_tokens),
  };
}

/** Whether a line looks like a Claude Code entry (for format detection). */
export function isClaudeCodeEntry(value: unknown): boolean {
  return (
    isObject(value) &&
    ('sessionId' in value || 'parentUuid' in value || 'leafUuid' in value) &&
    typeof value.type === 'string'
  );
}

export function fromClaudeCode(lines: readonly JsonLine[], file: string, key: string): Transcript {
  const builder = new MessageBuilder();
  const seen = new Set<string>();
  let replyId: string | null = null;
  let sessionId: string | null = null;
  for (const { line, value } of lines) {
    if (!isObject(value))
      throw new TranscriptError(file, line, 'expected a Claude Code entry (a JSON object)');
    if (value.type !== 'user' && value.type !== 'assistant') continue;
    if (value.isSidechain === true || value.isMeta === true) continue;
    // A resumed session repeats the entries it continues from.
    if (typeof value.uuid === 'string') {
      if (seen.has(value.uuid)) continue;
      seen.add(value.uuid);
    }
    sessionId ??= typeof value.sessionId === 'string' ? value.sessionId : null;
    const message = value.message;
    if (!isObject(message)) {
      throw new TranscriptError(file, line, `a "${value.type}" entry without its "message" object`);
    }
    const at = timestamp(value.timestamp);
    if (value.type === 'user') {
      replyId = null;
      const content = message.content;
      if (typeof content === 'string') {
        builder.text('user', content, at);
        continue;
      }
      if (!Array.isArray(content))
        throw new TranscriptError(file, line, 'user "content" is neither text nor blocks');
      const texts: string[] = [];
      for (const block of content) {
        if (isObject(block) && block.type === 'tool_result') {
          builder.result(String(block.tool_use_id), contentText(block.content), block.is_error === true);
        } else {
          texts.push(contentText([block]));
        }
      }
      const text = texts.filter(Boolean).join('\n');
      if (text) builder.text('user', text, at);
      continue;
    }
    // An assistant entry: a new model call unless it continues the reply being streamed.
    const id = typeof message.id === 'string' ? message.id : null;
    if (id === null || id !== replyId) builder.closeStep();
    replyId = id;
    const content = Array.isArray(message.content) ? message.content : [message.content];
    for (const block of content) {
      if (typeof block === 'string') builder.assistantText(block, at);
      else if (!isObject(block)) continue;
      else if (block.type === 'text') builder.assistantText(String(block.text ?? ''), at);
      else if (block.type === 'thinking') builder.reasoning(String(block.thinking ?? ''), at);
      else if (block.type === 'tool_use') {
        builder.call(
          String(block.id),
          String(block.name ?? 'tool'),
          isObject(block.input) ? block.input : {},
          at,
        );
      }
    }
    const usage = usageOf(message.usage);
    if (usage) builder.usage(usage);
    if (message.stop_reason === 'max_tokens') builder.truncated();
  }
  const messages = builder.finish();
  if (messages.length === 0)
    throw new TranscriptError(file, null, 'no user or assistant entries (Claude Code format)');
  return { key: sessionId ? `${key}#${sessionId.slice(0, 8)}` : key, file, format: 'claude-code', messages };
}
