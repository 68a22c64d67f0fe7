/**
 * The served context of a drop-in request takes the status its own writes read: across a
 * tool-using conversation (results patched onto stored calls, new user turns appended), the
 * context served with the request's reading is the context a read of its own serves.
 */
import { describe, expect, it } from 'vitest';
import { useTestSessions } from '@compactor/sessions/testing';
import { recordAnswer, syncConversation } from './conversation';
import type { GatewayDeps } from './conversation-types';
import { servedOpenAIContext } from './served-context';
import { openAIAnswer } from '@compactor/core';
import {
  chatRequest,
  completion,
  conversationDeps,
  reply,
  system,
  toolCall,
  toolResult,
  user,
  type ChatMessage,
} from './test-support/conversations';

const t = useTestSessions();
const clock = { now: new Date('2026-03-01T12:00:00Z') };
const deps = conversationDeps(t, clock);

/** `deps` over a database that counts the transactions opened on it (a status read opens one). */
function countingTransactions(): { deps: GatewayDeps; transactions: () => number } {
  let opened = 0;
  const db = new Proxy(deps.resources.db, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (key !== 'transaction' || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        opened += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { deps: { ...deps, resources: { ...deps.resources, db } }, transactions: () => opened };
}

describe('servedOpenAIContext with the request’s own reading', () => {
  it('serves what a read of its own serves, turn after turn of a tool-using conversation', async () => {
    const messages: ChatMessage[] = [system('You port ledgers.'), user('read the loader')];
    const kept: boolean[] = [];
    for (let i = 1; i <= 6; i++) {
      const synced = await syncConversation(deps, chatRequest('t-reading', messages));
      const counting = countingTransactions();
      const reused = await servedOpenAIContext(counting.deps, synced.session, 0, {
        session: synced.row,
        reading: synced.reading,
      });
      kept.push(synced.reading !== null && counting.transactions() === 0);
      const own = await servedOpenAIContext(deps, synced.session, 0);
      expect(reused).toEqual(own);
      const answer = i % 2 === 1 ? toolCall(`call_${i}`, `cat src/file${i}.ts`) : reply(`done ${i}`);
      const body = completion(answer);
      await recordAnswer(deps, synced, openAIAnswer(body), { protocol: 'openai', body });
      messages.push(answer);
      messages.push(
        i % 2 === 1 ? toolResult(`call_${i}`, `export const x${i} = ${i};\n`.repeat(20)) : user(`next ${i}`),
      );
    }
    // Every request wrote something (its first message, a tool result or a user turn): each one's
    // last write read a status, which the context read kept (no transaction of its own).
    expect(kept).toEqual([true, true, true, true, true, true]);
  });
});
