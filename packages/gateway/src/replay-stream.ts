/**
 * A stored Chat Completion sent again as a stream (an identical retry of a streamed request):
 * the chunks a provider would have sent for it, in the order it sends them.
 */
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';

/** The SSE events of `completion`: role and content, tool calls, finish, usage when asked, `[DONE]`. */
export function completionAsEvents(completion: ChatCompletion, includeUsage: boolean): string[] {
  const chunk = (choices: ChatCompletionChunk.Choice[], usage?: ChatCompletion['usage']): string =>
    `data: ${JSON.stringify({
      id: completion.id,
      object: 'chat.completion.chunk',
      created: completion.created,
      model: completion.model,
      ...(completion.system_fingerprint !== undefined
        ? { system_fingerprint: completion.system_fingerprint }
        : {}),
      choices,
      ...(usage !== undefined ? { usage } : {}),
    } satisfies ChatCompletionChunk)}\n\n`;
  const events: string[] = [];
  for (const choice of completion.choices) {
    const { message, index } = choice;
    events.push(
      chunk([{ index, delta: { role: 'assistant', content: message.content ?? '' }, finish_reason: null }]),
    );
    const calls = (message.tool_calls ?? []).flatMap((call, i) =>
      call.type === 'function'
        ? [
            {
              index: i,
              id: call.id,
              type: 'function' as const,
              function: { name: call.function.name, arguments: call.function.arguments },
            },
          ]
        : [],
    );
    if (calls.length > 0) events.push(chunk([{ index, delta: { tool_calls: calls }, finish_reason: null }]));
    events.push(chunk([{ index, delta: {}, finish_reason: choice.finish_reason }]));
  }
  if (includeUsage && completion.usage) events.push(chunk([], completion.usage));
  events.push('data: [DONE]\n\n');
  return events;
}
