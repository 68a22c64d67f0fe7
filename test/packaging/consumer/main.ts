/**
 * A program of a project that installed the packed @compactor/client and @compactor/contract
 * tarballs (see pack-and-install.test.ts): type-checked there under `nodenext` and `bundler`,
 * compiled, and run with plain node against a live API. It prints what it saw as one JSON line.
 *
 *   node main.js <baseUrl> <apiKey> <sessionId>
 */
import { CompactorApiError, CompactorClient, type OpenAIMessage } from '@compactor/client';
import { ContextOut, type SessionStatus } from '@compactor/contract';

const [baseUrl, apiKey, sessionId] = process.argv.slice(2);
if (!baseUrl || !apiKey || !sessionId) throw new Error('usage: node main.js <baseUrl> <apiKey> <sessionId>');

const client = new CompactorClient({ baseUrl, apiKey, validateResponses: true });
await client.createSession({ id: sessionId, model: { id: 'gpt-4o' } });
const appended = await client.appendMessages(sessionId, [
  { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'What is in src?' }] },
  {
    id: 'a1',
    role: 'assistant',
    parts: [{ type: 'tool', callId: 'call_1', tool: 'ls', status: 'running', input: { path: 'src' } }],
  },
]);
// The call has no result yet: the model would read it as interrupted.
const unfinished: OpenAIMessage[] = (await client.getContext(sessionId, { format: 'openai' })).messages;
const patched = await client.patchMessage(sessionId, 'a1', {
  finish: 'tool-calls',
  parts: [{ type: 'tool', callId: 'call_1', tool: 'ls', status: 'completed', output: 'app.ts' }],
});
const status: SessionStatus = patched.status;
const context = await client.getContext(sessionId, { format: 'openai' });

let missing: string | null = null;
try {
  await client.getSession(`${sessionId}-missing`);
} catch (error) {
  if (error instanceof CompactorApiError) missing = `${error.status} ${error.code}`;
}

console.log(
  JSON.stringify({
    seqs: appended.messages.map((m) => m.seq),
    unfinished,
    messages: context.messages,
    contextMessages: status.contextMessages,
    contextParses: ContextOut.safeParse(context).success,
    missing,
  }),
);
