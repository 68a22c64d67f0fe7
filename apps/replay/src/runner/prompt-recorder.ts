/**
 * Records the prompt of each of the agent's model calls, for the prompt-cache cost
 * (cache-cost.ts): the context Compactor serves at that moment, one block per message, keyed by
 * the message's id and a digest of its rendering (a pruned output or a clamped part changes it),
 * after a block for the transcript's overhead (system prompt, tool definitions), which every
 * prompt starts with.
 */
import { createHash } from 'node:crypto';
import type { CompactorClient, NativeContext } from '@compactor/client';
import type { MessageInput } from '@compactor/db';
import type { ModelCall, PromptBlock } from '../cache-cost';

/** The blocks of a served context, after `overhead` tokens the transcript's prompts held beyond it. */
export function promptBlocks(context: Pick<NativeContext, 'messages'>, overhead: number): PromptBlock[] {
  const blocks = context.messages.map((message) => ({
    key: `${message.id}:${createHash('sha1')
      .update(JSON.stringify([message.role, message.parts]))
      .digest('base64url')}`,
    tokens: message.parts.reduce((sum, part) => sum + part.tokens, 0),
  }));
  return overhead > 0 ? [{ key: `overhead:${overhead}`, tokens: overhead }, ...blocks] : blocks;
}

/** The model call that produced `message`, sent with the session's current context. */
export async function readModelCall(
  client: CompactorClient,
  sessionId: string,
  message: MessageInput,
  overhead: number,
): Promise<ModelCall> {
  const context = await client.getContext(sessionId);
  const usage = message.usage;
  const at = message.createdAt ? Date.parse(message.createdAt) : NaN;
  return {
    prompt: promptBlocks(context, overhead),
    // `output` counts the reasoning too (core's Usage).
    output: usage ? usage.output : 0,
    at: Number.isNaN(at) ? null : at,
  };
}
