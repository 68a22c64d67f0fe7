import { createHash, randomUUID } from 'node:crypto';
import type { Part, Role, ToolPart } from '@compactor/core';
import type { Db } from '../client';
import type { NewMessage } from '../operations/new-message';
import { insertSession } from '../queries/sessions';

/** A session row with a unique id, for tests that need somewhere to append. */
export async function createTestSession(db: Db, tenantId = 'tenant-a', id = `ses_${randomUUID()}`) {
  const row = await insertSession(db, {
    tenantId,
    id,
    modelId: 'gpt-4o',
    provider: 'openai',
    contextWindow: 128_000,
    maxOutputTokens: 16_384,
    createHash: 'test',
  });
  if (!row) throw new Error('session insert failed');
  return row;
}

const hashOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/** A new message whose content hash covers role and parts, as the API computes it. */
export function newMessage(role: Role, parts: Part[], extra: Partial<NewMessage> = {}): NewMessage {
  const base = {
    id: extra.id ?? `msg_${randomUUID()}`,
    role,
    parts,
    finish: null,
    error: null,
    usage: null,
    createdAt: new Date('2026-11-01T00:00:00Z'),
    metadata: {},
    ...extra,
  };
  return { contentHash: hashOf({ role: base.role, parts: base.parts, usage: base.usage }), ...base };
}

export const text = (value: string, tokens = Math.ceil(value.length / 4)): Part => ({
  type: 'text',
  text: value,
  tokens,
});

export function tool(callId: string, output: string | null, overrides: Partial<ToolPart> = {}): ToolPart {
  const outputTokens = output === null ? 0 : Math.ceil(output.length / 4);
  return {
    type: 'tool',
    callId,
    tool: 'read',
    status: output === null ? 'running' : 'completed',
    input: { path: `${callId}.ts` },
    output,
    error: null,
    compactedAt: null,
    tokens: 5 + outputTokens,
    outputTokens,
    ...overrides,
  };
}
