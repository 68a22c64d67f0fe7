import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_SESSIONS_PATH, renderExampleSessions } from './generate-example-sessions';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('examples/sessions/coding-sessions.jsonl', () => {
  it('is what `npm run examples:sessions` generates (docs/REPLAY.md replays it)', () => {
    const committed = readFileSync(path.join(root, EXAMPLE_SESSIONS_PATH), 'utf8');
    // On failure: run `npm run examples:sessions` and commit the file (and rerun the walkthrough).
    expect(committed === renderExampleSessions(), 'the example sessions are stale').toBe(true);
  });

  it('holds three sessions of growing length in the API message format', () => {
    const sessions = renderExampleSessions()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { messages: Array<{ role: string; parts: unknown[] }> });
    const lengths = sessions.map((s) => s.messages.length);
    expect(lengths).toHaveLength(3);
    expect(lengths[0]).toBeLessThan(lengths[1]!);
    expect(lengths[1]).toBeLessThan(lengths[2]!);
    for (const { messages } of sessions) {
      expect(messages[0]!.role).toBe('user');
      expect(messages.every((m) => m.parts.length > 0)).toBe(true);
    }
  });
});
