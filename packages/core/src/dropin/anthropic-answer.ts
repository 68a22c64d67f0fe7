/** An Anthropic `Message` (or one accumulated from its stream) → the assistant message Compactor stores. */
import type { Finish, Usage } from '../model';
import { anthropicMessageDraft } from './anthropic-elements';
import { reportedCount, type DropInAnswer } from './answer';
import { DropInInputError } from './input-error';
import { array, isRecord, record } from './read-input';

/**
 * The answer of a Messages response: its content blocks as one assistant message (thinking kept
 * with its signature, server tool blocks kept verbatim), the stop reason and usage. The echo is
 * the canonical form of `{ role: 'assistant', content }`, which is what the client sends back.
 */
export function anthropicAnswer(message: unknown): DropInAnswer {
  const body = record(message, []);
  if (body['role'] !== undefined && body['role'] !== 'assistant') {
    throw new DropInInputError(['role'], 'must be "assistant"');
  }
  const draft = anthropicMessageDraft(
    { role: 'assistant', content: array(body['content'], ['content']) },
    [],
  );
  const usage = anthropicUsage(body['usage']);
  return {
    message: {
      role: 'assistant',
      parts: [],
      ...draft.message,
      finish: anthropicFinish(body['stop_reason']),
      usage,
    },
    echo: draft.canonical,
    usage,
  };
}

/** Messages usage → {@link Usage}: Anthropic's `input_tokens` already leaves the cache out. */
export function anthropicUsage(value: unknown): Usage | null {
  if (!isRecord(value)) return null;
  return {
    input: reportedCount(value['input_tokens']),
    output: reportedCount(value['output_tokens']),
    // Thinking is counted in output_tokens without a breakdown.
    reasoning: 0,
    cacheRead: reportedCount(value['cache_read_input_tokens']),
    cacheWrite: reportedCount(value['cache_creation_input_tokens']),
  };
}

function anthropicFinish(reason: unknown): Finish | null {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'tool_use':
      return 'tool-calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content-filter';
    case null:
    case undefined:
      return null;
    default:
      // pause_turn (a server tool loop paused) and reasons added later.
      return 'other';
  }
}
