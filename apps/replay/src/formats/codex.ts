/**
 * Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): lines of
 * `{ timestamp, type, payload }` where `response_item` payloads are the Responses API items
 * (`message`, `reasoning`, `function_call`, `function_call_output`, `custom_tool_call`, …) and an
 * `event_msg` of type `token_count` closes a model call with its usage. Older rollouts hold the
 * items bare, after a first line with the session id. The environment context and AGENTS.md
 * instructions Codex injects as user messages are instructions, not requests: they become system
 * messages.
 */
import type { Usage } from '@compactor/core';
import { isObject, TranscriptError, type Transcript } from '../transcript';
import type { JsonLine } from './json-lines';
import { MessageBuilder } from './message-builder';
import { contentText, count, timestamp, toolInput } from './text';

const ENVELOPE_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);
const ITEM_TYPES = new Set([
  'message',
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
]);
/** User messages Codex writes itself: context and instructions, not the user's words. */
const INJECTED = /^\s*(<environment_context>|<user_instructions>|<permissions instructions>|# AGENTS\.md)/;

/** Whether a line looks like a Codex rollout line, new or legacy (for format detection). */
export function isCodexLine(value: unknown): boolean {
  if (!isObject(value)) return false;
  if (typeof value.type === 'string' && ENVELOPE_TYPES.has(value.type) && 'payload' in value) return true;
  if (typeof value.type === 'string' && ITEM_TYPES.has(value.type)) return true;
  return 'record_type' in value || ('instructions' in value && 'id' in value && !('messages' in value));
}

function usageOf(raw: unknown): Usage | null {
  if (!isObject(raw)) return null;
  const cached = count(raw.cached_input_tokens);
  return {
    // OpenAI's input_tokens include the cached ones; the API's `input` does not.
    input: Math.max(0, count(raw.input_tokens) - cached),
    cacheRead: cached,
    cacheWrite: 0,
    output: count(raw.output_tokens),
    reasoning: count(raw.reasoning_output_tokens),
  };
}

/** A tool output: plain text, or Codex's JSON envelope `{ output, metadata }` around it. */
function outputText(raw: unknown): string {
  if (typeof raw !== 'string') return contentText(raw);
  if (raw.startsWith('{')) {
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (isObject(parsed) && typeof parsed.output === 'string') return parsed.output;
    } catch {
      // Plain output that happens to start with a brace.
    }
  }
  return raw;
}

export function fromCodex(lines: readonly JsonLine[], file: string, key: string): Transcript {
  const builder = new MessageBuilder();
  let sessionId: string | null = null;
  /** A tool result arrived since the open step's last output: the next output is a new model call. */
  let resultSinceOutput = false;
  const assistantOutput = () => {
    if (resultSinceOutput) builder.closeStep();
    resultSinceOutput = false;
  };
  for (const { line, value } of lines) {
    if (!isObject(value))
      throw new TranscriptError(file, line, 'expected a Codex rollout line (a JSON object)');
    const at = timestamp(value.timestamp);
    let item: Record<string, unknown>;
    if (typeof value.type === 'string' && ENVELOPE_TYPES.has(value.type)) {
      if (!isObject(value.payload))
        throw new TranscriptError(file, line, `"${value.type}" line without a "payload" object`);
      const payload = value.payload;
      if (value.type === 'session_meta') {
        sessionId ??= typeof payload.id === 'string' ? payload.id : null;
        if (typeof payload.instructions === 'string') builder.text('system', payload.instructions, at);
        continue;
      }
      if (value.type === 'event_msg') {
        if (payload.type === 'token_count' && isObject(payload.info)) {
          const usage = usageOf(payload.info.last_token_usage);
          if (usage && builder.stepOpen) {
            builder.usage(usage);
            builder.closeStep();
          }
        }
        continue;
      }
      if (value.type !== 'response_item') continue;
      item = payload;
    } else {
      // Legacy rollout: the first line is the session, state lines carry no conversation.
      if ('record_type' in value) continue;
      if (!('type' in value) && typeof value.id === 'string') {
        sessionId ??= value.id;
        if (typeof value.instructions === 'string') builder.text('system', value.instructions, at);
        continue;
      }
      item = value;
    }

    switch (item.type) {
      case 'message': {
        const text = contentText(item.content);
        if (item.role === 'assistant') {
          assistantOutput();
          builder.assistantText(text, at);
        } else if (item.role === 'user' && !INJECTED.test(text)) {
          builder.text('user', text, at);
        } else {
          builder.text('system', text, at);
        }
        break;
      }
      case 'reasoning': {
        assistantOutput();
        const summary = Array.isArray(item.summary) ? contentText(item.summary) : '';
        builder.reasoning(summary || contentText(item.content), at);
        break;
      }
      case 'function_call':
        assistantOutput();
        builder.call(
          String(item.call_id ?? item.id),
          String(item.name ?? 'tool'),
          toolInput(item.arguments),
          at,
        );
        break;
      case 'custom_tool_call':
        assistantOutput();
        // apply_patch's argument is the patch itself; core reads it from `input`.
        builder.call(
          String(item.call_id ?? item.id),
          String(item.name ?? 'tool'),
          { input: item.input ?? '' },
          at,
        );
        break;
      case 'local_shell_call': {
        assistantOutput();
        const action = isObject(item.action) ? item.action : {};
        builder.call(String(item.call_id ?? item.id), 'shell', { command: action.command ?? [] }, at);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
        builder.result(String(item.call_id), outputText(item.output), false);
        resultSinceOutput = true;
        break;
      default:
        // web_search_call and future item types: not conversation the replay can store.
        break;
    }
  }
  const messages = builder.finish();
  if (messages.length === 0)
    throw new TranscriptError(file, null, 'no conversation items (Codex rollout format)');
  return { key: sessionId ? `${key}#${sessionId.slice(0, 8)}` : key, file, format: 'codex', messages };
}
