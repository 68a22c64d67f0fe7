/**
 * A stored Message sent again as a stream (an identical retry of a streamed request): the events
 * Anthropic would have sent for it, in its order, which the SDK's `MessageStream` assembles back
 * into the same content.
 */
import type { ContentBlock, Message } from '@anthropic-ai/sdk/resources/messages';

const event = (type: string, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** The SSE events of `message`: start, each block (start, its deltas, stop), delta with the stop reason, stop. */
export function messageAsEvents(message: Message): string[] {
  const events = [
    event('message_start', {
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...message.usage, output_tokens: 0 },
      },
    }),
  ];
  message.content.forEach((block, index) => {
    const { start, deltas } = blockEvents(block);
    events.push(event('content_block_start', { index, content_block: start }));
    for (const delta of deltas) events.push(event('content_block_delta', { index, delta }));
    events.push(event('content_block_stop', { index }));
  });
  events.push(
    event('message_delta', {
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
      usage: { output_tokens: message.usage.output_tokens },
    }),
    event('message_stop', {}),
  );
  return events;
}

/** A block as its start (empty where deltas fill it) and the deltas that fill it. */
function blockEvents(block: ContentBlock): { start: unknown; deltas: Record<string, unknown>[] } {
  switch (block.type) {
    case 'text': {
      // Citations come as deltas after the text, each appended to the start's (empty) list.
      const cited = (block.citations ?? []).map((citation) => ({ type: 'citations_delta', citation }));
      const start = { ...block, text: '', ...(cited.length > 0 ? { citations: [] } : {}) };
      return { start, deltas: [{ type: 'text_delta', text: block.text }, ...cited] };
    }
    case 'thinking':
      return {
        start: { ...block, thinking: '', signature: '' },
        deltas: [
          { type: 'thinking_delta', thinking: block.thinking },
          { type: 'signature_delta', signature: block.signature },
        ],
      };
    case 'tool_use':
    case 'server_tool_use':
      return {
        start: { ...block, input: {} },
        deltas: [{ type: 'input_json_delta', partial_json: JSON.stringify(block.input ?? {}) }],
      };
    default:
      // Redacted thinking, server tool results: sent whole in their start, as Anthropic does.
      return { start: block, deltas: [] };
  }
}
