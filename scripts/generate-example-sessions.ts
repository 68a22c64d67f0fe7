/**
 * `npm run examples:sessions`: writes examples/sessions/coding-sessions.jsonl, the transcripts the
 * walkthrough in docs/REPLAY.md replays — three generated coding-agent sessions (a short one, a
 * medium one, a long one) in the API's message format, one `{ title, messages }` line each. The
 * generator is deterministic (seeded), so the file is reproducible and a test holds it to this
 * script.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCodingSession } from '@compactor/testing/fixtures';

export const EXAMPLE_SESSIONS_PATH = 'examples/sessions/coding-sessions.jsonl';

/** The three sessions: follow-up turns, lines per file read, and the generator's seed. */
const SESSIONS = [
  { title: 'generated coding session: a bug fix, 2 follow-ups', turns: 2, fileLines: 120, seed: 1 },
  { title: 'generated coding session: 5 follow-ups', turns: 5, fileLines: 220, seed: 2 },
  { title: 'generated coding session: 8 follow-ups, long file reads', turns: 8, fileLines: 400, seed: 3 },
];

export function renderExampleSessions(): string {
  return SESSIONS.map(({ title, ...options }) =>
    JSON.stringify({ source: 'generated', title, messages: generateCodingSession(options) }),
  )
    .map((line) => `${line}\n`)
    .join('');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  writeFileSync(path.join(root, EXAMPLE_SESSIONS_PATH), renderExampleSessions());
  console.log(`wrote ${EXAMPLE_SESSIONS_PATH}`);
}
