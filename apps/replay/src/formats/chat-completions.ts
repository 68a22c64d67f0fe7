/**
 * Plain Chat Completions `messages` arrays: `system` / `developer` / `user` text, `assistant`
 * messages with optional `tool_calls`, and `tool` messages answering them by `tool_call_id`.
 * Each assistant message is one model call.
 */
import { isObject, TranscriptError, type Transcript } from '../transcript';
import { MessageBuilder } from './message-builder';
import { contentText, toolInput } from './text';

/** Whether an array looks like Chat Completions messages (for format detection). */
export function isChatMessages(value: unknown): value is unknown[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((m) => isObject(m) && typeof m.role === 'string' && !('parts' in m))
  );
}

/** `where` names the place for errors: a line of a JSONL file, or null for a whole JSON file. */
export function fromChatMessages(
  messages: readonly unknown[],
  file: string,
  key: string,
  line: number | null,
): Transcript {
  const builder = new MessageBuilder();
  messages.forEach((message, index) => {
    const fail = (detail: string) => new TranscriptError(file, line, `message ${index}: ${detail}`);
    if (!isObject(message)) throw fail('not an object');
    const text = contentText(message.content);
    switch (message.role) {
      case 'system':
      case 'developer':
        builder.text('system', text);
        break;
      case 'user':
        builder.text('user', text);
        break;
      case 'assistant': {
        builder.closeStep();
        builder.assistantText(text);
        const calls = message.tool_calls ?? [];
        if (!Array.isArray(calls)) throw fail('"tool_calls" is not an array');
        for (const call of calls) {
          if (!isObject(call) || !isObject(call.function)) throw fail('a tool call without its "function"');
          builder.call(
            String(call.id),
            String(call.function.name ?? 'tool'),
            toolInput(call.function.arguments),
          );
        }
        break;
      }
      case 'tool':
        if (typeof message.tool_call_id !== 'string') throw fail('a tool message without "tool_call_id"');
        builder.result(message.tool_call_id, text, false);
        break;
      default:
        throw fail(`unknown role ${JSON.stringify(message.role)}`);
    }
  });
  const built = builder.finish();
  if (built.length === 0) throw new TranscriptError(file, line, 'no messages with content');
  return { key, file, format: 'chat-completions', messages: built };
}
