/**
 * A first request the store refuses creates no session: a tool-result or user image the media
 * checks refuse (over the size limits, broken base64, not an image, SVG), a result for a call the
 * conversation never made, a malformed session header. The same conversation sent right then
 * creates its session whole.
 */
import { describe, expect, it } from 'vitest';
import { anthropicElements, DropInInputError } from '@compactor/core';
import { InvalidInput } from '@compactor/sessions';
import { useTestSessions } from '@compactor/sessions/testing';
import { syncConversation, type ConversationRequest } from './conversation';
import {
  chatRequest,
  conversationDeps,
  storedMessages,
  system,
  toolResult,
  user,
} from './test-support/conversations';

const t = useTestSessions();
const deps = conversationDeps(t, { now: new Date('2026-03-01T12:00:00Z') });

/** The ids of the tenant's sessions. */
async function sessionsOf(tenantId: string): Promise<string[]> {
  const { rows } = await t.database.db.$client.query<{ id: string }>(
    'select id from sessions where tenant_id = $1',
    [tenantId],
  );
  return rows.map((r) => r.id);
}

/** A PNG's signature and header declaring `width × height`: what the media checks read. */
function pngUrl(width: number, height: number): string {
  const bytes = Buffer.alloc(97, 7);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write('IHDR', 12, 'ascii');
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return `data:image/png;base64,${bytes.toString('base64')}`;
}

const REFUSED_IMAGES: [string, string][] = [
  ['over the size limits', pngUrl(200_000, 200_000)],
  ['broken base64', 'data:image/png;base64,iVBORw0KGgo*AAA'],
  ['not an image', `data:image/png;base64,${Buffer.from('not an image').toString('base64')}`],
  ['an SVG', `data:image/svg+xml;base64,${Buffer.from('<svg></svg>').toString('base64')}`],
];

/** A Messages request whose first turn reads a screenshot, answered with `url`. */
function screenshotRequest(tenantId: string, url: string): ConversationRequest {
  const media = url.slice('data:'.length, url.indexOf(';'));
  const data = url.slice(url.indexOf(',') + 1);
  return {
    tenantId,
    protocol: 'anthropic',
    sessionHeader: undefined,
    model: 'claude-sonnet-4-5',
    overrides: { contextWindow: 8_000 },
    elements: anthropicElements('You are a coding agent.', [
      { role: 'user', content: 'what does the page show?' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [{ type: 'image', source: { type: 'base64', media_type: media, data } }],
          },
        ],
      },
    ]),
  };
}

const imageMessage = (url: string) => ({
  role: 'user',
  content: [
    { type: 'text', text: 'look' },
    { type: 'image_url', image_url: { url } },
  ],
});

describe('a refused first request', () => {
  it.each(REFUSED_IMAGES)('with a tool-result image that is %s leaves no session', async (_, url) => {
    const tenant = `t-tool-image-${REFUSED_IMAGES.findIndex(([, u]) => u === url)}`;
    await expect(syncConversation(deps, screenshotRequest(tenant, url))).rejects.toBeInstanceOf(InvalidInput);
    expect(await sessionsOf(tenant)).toEqual([]);
    // The same turn with an image the checks take creates the session, every message in it.
    const created = await syncConversation(deps, screenshotRequest(tenant, pngUrl(64, 48)));
    expect(created.outcome).toBe('created');
    expect(await sessionsOf(tenant)).toEqual([created.session.id]);
    const stored = await storedMessages(t, tenant, created.session.id);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
  });

  it.each(REFUSED_IMAGES)('with a user image that is %s leaves no session', async (_, url) => {
    const tenant = `t-user-image-${REFUSED_IMAGES.findIndex(([, u]) => u === url)}`;
    const refused = chatRequest(tenant, [system('sys'), imageMessage(url)], { header: 'named' });
    await expect(syncConversation(deps, refused)).rejects.toBeInstanceOf(InvalidInput);
    expect(await sessionsOf(tenant)).toEqual([]);
  });

  it('with a result for a call it never made, or a malformed session header, leaves no session', async () => {
    const orphan = chatRequest('t-orphan', [user('hi'), toolResult('call_x', 'out')]);
    await expect(syncConversation(deps, orphan)).rejects.toBeInstanceOf(DropInInputError);
    const header = chatRequest('t-orphan', [user('hi')], { header: 'has space' });
    await expect(syncConversation(deps, header)).rejects.toBeInstanceOf(InvalidInput);
    expect(await sessionsOf('t-orphan')).toEqual([]);
  });
});
