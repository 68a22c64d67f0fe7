import type http from 'node:http';
import type { AnthropicBlock, AnthropicUsage } from './anthropic-wire';
import { anthropicUsage, contentBlocks, messageBody, stopReason, thinkingBlock } from './anthropic-wire';
import type { AnswerWrite } from './http-io';
import { endBody, SSE_HEADERS } from './http-io';

/**
 * An Anthropic `Message` as JSON, or as the event stream the SDK's `MessageStream` assembles:
 * `message_start`, `ping`, then per block `content_block_start`, its deltas (`thinking_delta`
 * and `signature_delta`, `text_delta`, `input_json_delta`) and `content_block_stop`, then
 * `message_delta` (stop reason, usage) and `message_stop`. Broken on purpose when the faults say so.
 */
export function writeAnthropicMessage(res: http.ServerResponse, write: AnswerWrite): void {
  const { id, request, faults } = write;
  const { output, completionTokens } = write.answer;
  const thinking = request.thinkingEnabled ? thinkingBlock(request) : null;
  const blocks = contentBlocks(output, thinking);
  const usage = anthropicUsage(write.promptTokens, completionTokens);
  if (!request.stream) {
    const json =
      faults.output === 'malformed'
        ? `{"id":"${id}","type":"message","content":[`
        : JSON.stringify(messageBody(id, request.model, blocks, output.finishReason, usage));
    res.writeHead(200, { 'content-type': 'application/json' });
    return endBody(res, json, faults.drop);
  }
  res.writeHead(200, SSE_HEADERS);
  const events = streamEvents(id, request.model, blocks, stopReason(output.finishReason), usage, {
    pieceChars: write.pieceChars || Number.POSITIVE_INFINITY,
  });
  // A malformed stream: the message start, then an event whose data is not JSON, and no stop.
  if (faults.output === 'malformed') {
    events.splice(
      1,
      events.length - 1,
      'event: content_block_delta\ndata: {"type":"content_block_delta",\n\n',
    );
  }
  endBody(res, events.join(''), faults.drop);
}

const sse = (type: string, data: object): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}

function blockEvents(index: number, block: AnthropicBlock, pieceChars: number): string[] {
  const delta = (payload: object): string => sse('content_block_delta', { index, delta: payload });
  switch (block.type) {
    case 'thinking':
      return [
        sse('content_block_start', {
          index,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        }),
        ...pieces(block.thinking, pieceChars).map((thinking) => delta({ type: 'thinking_delta', thinking })),
        delta({ type: 'signature_delta', signature: block.signature }),
        sse('content_block_stop', { index }),
      ];
    case 'text':
      return [
        sse('content_block_start', { index, content_block: { type: 'text', text: '', citations: null } }),
        ...pieces(block.text, pieceChars).map((text) => delta({ type: 'text_delta', text })),
        sse('content_block_stop', { index }),
      ];
    case 'tool_use':
      return [
        sse('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
        }),
        ...pieces(JSON.stringify(block.input), pieceChars).map((partial_json) =>
          delta({ type: 'input_json_delta', partial_json }),
        ),
        sse('content_block_stop', { index }),
      ];
  }
}

function streamEvents(
  id: string,
  model: string,
  blocks: AnthropicBlock[],
  stop: string,
  usage: AnthropicUsage,
  options: { pieceChars: number },
): string[] {
  const start = {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    // Providers report the input at the start and the output as it grows; one token so far.
    usage: { ...usage, output_tokens: 1 },
  };
  return [
    sse('message_start', { message: start }),
    sse('ping', {}),
    ...blocks.flatMap((block, index) => blockEvents(index, block, options.pieceChars)),
    sse('message_delta', {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: {
        output_tokens: usage.output_tokens,
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
      },
    }),
    sse('message_stop', {}),
  ];
}
