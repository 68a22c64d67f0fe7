import { describe, expect, it } from 'vitest';
import { extractFileOps, MAX_LISTED_FILES, type Message } from '@compactor/core';
import { assistant, conversation, toolCall } from '@compactor/core/testing';
import { FileOpsRanking } from './file-ops-ranking';

/** Deterministic pseudo-random numbers in [0, 1). */
function lcg(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

/** Messages of read, edit and write calls over `paths` distinct files, a few calls each. */
function calls(count: number, paths: number, seed: number): Message[] {
  const random = lcg(seed);
  const tools = ['read', 'edit', 'write', 'read', 'read'];
  return conversation(
    Array.from({ length: count }, () =>
      assistant(
        Array.from({ length: 1 + Math.floor(random() * 3) }, () =>
          toolCall(
            tools[Math.floor(random() * tools.length)]!,
            { filePath: `src/f${Math.floor(random() * paths)}.ts` },
            'ok',
          ),
        ),
      ),
    ),
  );
}

/** `messages` cut into windows of random sizes up to `largest`. */
function windows(messages: Message[], largest: number, seed: number): Message[][] {
  const random = lcg(seed);
  const out: Message[][] = [];
  for (let at = 0; at < messages.length;) {
    const size = 1 + Math.floor(random() * largest);
    out.push(messages.slice(at, at + size));
    at += size;
  }
  return out;
}

describe('file ops ranked window by window', () => {
  it('are exactly the file ops of the whole range, each message read once', () => {
    for (const [count, paths, largest] of [
      [40, 12, 5],
      [300, 60, 17],
      [2_000, 3 * MAX_LISTED_FILES, 64],
    ] as const) {
      for (let seed = 1; seed <= 5; seed += 1) {
        const messages = calls(count, paths, seed);
        const ranking = new FileOpsRanking();
        for (const window of windows(messages, largest, seed)) ranking.add(window);
        expect(ranking.result()).toEqual(extractFileOps(messages));
      }
    }
  });

  it('ranks a file read late but modified early by its read, among the modified ones', () => {
    const messages = conversation([
      assistant([toolCall('edit', { filePath: 'a.ts' }, 'ok')]),
      assistant([toolCall('edit', { filePath: 'b.ts' }, 'ok')]),
      assistant([toolCall('read', { filePath: 'a.ts' }, 'ok')]),
    ]);
    const ranking = new FileOpsRanking();
    for (const message of messages) ranking.add([message]);
    expect(ranking.result()).toEqual(extractFileOps(messages));
    expect(ranking.result().modifiedFiles).toEqual(['a.ts', 'b.ts']);
  });
});
