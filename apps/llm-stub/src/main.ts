import { startLlmStub } from '@compactor/llm-stub';
import { parseEnv } from './env';

// Process entry: `npm run llm-stub` (root) or `npm run start -w @compactor/llm-stub-app`.
const env = parseEnv(process.env);
const stub = await startLlmStub({
  port: env.port,
  host: env.host,
  apiKey: env.apiKey,
  faults: env.faults,
  ...(env.models ? { models: env.models } : {}),
  ...(env.streamPieceChars !== undefined ? { streamPieceChars: env.streamPieceChars } : {}),
});
// packages/stack reads the URL from `OPENAI_BASE_URL=…)`: it stays last, right before the parenthesis.
console.log(
  `llm-stub listening on ${stub.url} (ANTHROPIC_BASE_URL=${stub.origin}, OPENAI_BASE_URL=${stub.url})`,
);

let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    stub.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
