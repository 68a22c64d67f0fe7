/**
 * Type-checked with main.ts in the installed project, never run: if the packed declarations
 * degraded to `any` (an unresolved import in a .d.ts), these expected errors would be missing
 * and the check would fail.
 */
import type { CompactorClient, OpenAIMessage } from '@compactor/client';
import type { PatchMessageResponse } from '@compactor/contract';

export async function wrongUses(client: CompactorClient): Promise<void> {
  // @ts-expect-error: no such context format
  await client.getContext('s', { format: 'xml' });
  const context = await client.getContext('s', { format: 'openai' });
  const first: OpenAIMessage | undefined = context.messages[0];
  // @ts-expect-error: a Chat Completions message has no stored parts
  void first?.parts;
  const patched = null as unknown as PatchMessageResponse;
  // @ts-expect-error: a status's token count is a number
  const tokens: string = patched.status.tokens;
  void tokens;
}
