/** A Chat Completion (or one accumulated from a stream) → the assistant message Compactor stores. */
import type { Finish, Usage } from '../model';
import { reportedCount, type DropInAnswer } from './answer';
import { DropInInputError } from './input-error';
import { openAIMessageDraft } from './openai-elements';
import { array, isRecord, record } from './read-input';

/**
 * The answer of a `ChatCompletion`: its first choice's message (the drop-in endpoints ask for one
 * choice), finish reason and usage. The echo is the canonical form of that message, which is what
 * the client's copy of it hashes to however the SDK or the agent re-serialises it.
 */
export function openAIAnswer(completion: unknown): DropInAnswer {
  const body = record(completion, []);
  const choices = array(body['choices'], ['choices']);
  if (choices.length === 0) throw new DropInInputError(['choices'], 'the completion has no choice');
  const choice = record(choices[0], ['choices', 0]);
  // Index 0: a legacy function_call's derived id never reaches this path in practice; the
  // caller re-derives it from the element's position when the client echoes it back.
  const message = record(choice['message'], ['choices', 0, 'message']);
  // A message accumulated from a stream may lack the role its first delta carried.
  const draft = openAIMessageDraft(
    { ...message, role: message['role'] ?? 'assistant' },
    ['choices', 0, 'message'],
    0,
  );
  if (draft.role !== 'assistant' || draft.message === null) {
    throw new DropInInputError(['choices', 0, 'message', 'role'], 'must be "assistant"');
  }
  const usage = openAIUsage(body['usage']);
  return {
    message: { ...draft.message, finish: openAIFinish(choice['finish_reason']), usage },
    echo: draft.canonical,
    usage,
  };
}

/** Chat Completions usage → {@link Usage}: `prompt_tokens` includes the cached prefix, Compactor's `input` does not. */
export function openAIUsage(value: unknown): Usage | null {
  if (!isRecord(value)) return null;
  const prompt = reportedCount(value['prompt_tokens']);
  const promptDetails = isRecord(value['prompt_tokens_details']) ? value['prompt_tokens_details'] : {};
  const completionDetails = isRecord(value['completion_tokens_details'])
    ? value['completion_tokens_details']
    : {};
  const cacheRead = Math.min(prompt, reportedCount(promptDetails['cached_tokens']));
  const output = reportedCount(value['completion_tokens']);
  return {
    input: prompt - cacheRead,
    output,
    // The contract refuses reasoning above output; a provider that reports so is trusted for output.
    reasoning: Math.min(output, reportedCount(completionDetails['reasoning_tokens'])),
    cacheRead,
    cacheWrite: 0,
  };
}

function openAIFinish(reason: unknown): Finish | null {
  switch (reason) {
    case 'stop':
      return 'stop';
    case 'tool_calls':
    case 'function_call':
      return 'tool-calls';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    case null:
    case undefined:
      return null;
    default:
      return 'other';
  }
}
