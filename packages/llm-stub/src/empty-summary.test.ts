import { buildSummaryPrompt, validateSummaryOutput } from '@compactor/core';
import { assistant, conversation, text, toolCall, user } from '@compactor/core/testing';
import { describe, expect, it } from 'vitest';
import { answerChatRequest } from './completions';
import type { ChatRequest } from './openai-wire';

const messages = conversation([
  user('Migrate the orders table to UUID keys. Never run the migration against production.'),
  assistant([
    text('Reading the migration.'),
    toolCall('read', { filePath: 'db/migrations/0042_uuid.sql' }, 'ALTER TABLE orders …'),
  ]),
]);

const request = (kind: 'history' | 'turn-prefix'): ChatRequest => {
  const prompt = buildSummaryPrompt({ messages, kind });
  return {
    model: 'stub-summarizer',
    messages: [
      { role: 'system', content: prompt.system },
      { role: 'user', content: prompt.user },
    ],
  };
};

const answer = (req: ChatRequest) => answerChatRequest(req, 'drop-everything', 4_096).output.content ?? '';

describe('drop-everything', () => {
  it.each(['history', 'turn-prefix'] as const)(
    'answers a %s summary request with a valid summary that keeps no fact',
    (kind) => {
      const summary = answer(request(kind));
      expect(validateSummaryOutput(summary)).toEqual({ ok: true, text: summary });
      expect(summary).toMatch(kind === 'history' ? /^## Goal\n/ : /^## Original Request\n/);
      for (const fact of ['UUID', 'Never run the migration', 'db/migrations', 'orders']) {
        expect(summary).not.toContain(fact);
      }
      // The normal answer does keep them: the mode is what drops them.
      expect(answerChatRequest(request(kind), null, 4_096).output.content).toContain('UUID');
    },
  );

  it('answers other requests as usual', () => {
    const chat: ChatRequest = { model: 'stub', messages: [{ role: 'user', content: 'hello' }] };
    expect(answer(chat)).toBe('Stub reply to: hello');
  });
});
