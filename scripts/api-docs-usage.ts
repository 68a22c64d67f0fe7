/**
 * The "Usage" section of docs/API.md: what each field of an assistant turn's `usage` counts, where
 * it comes from in OpenAI's and Anthropic's answers, and the double count to avoid (OpenAI's
 * `prompt_tokens` already holds its `cached_tokens`: sent as `input` beside `cacheRead`, the cached
 * prefix counts twice).
 *
 * The fields are read from @compactor/contract's `UsageSchema`: a field added there without a
 * mapping here fails `npm run docs:api`. The mapping is the one the clients' helpers implement
 * (packages/client/src/usage.ts, clients/python/src/compactor_client/usage.py).
 */
import type { z } from 'zod';
import { UsageSchema } from '@compactor/contract';

interface Mapping {
  /** What the field counts, in a few words. */
  meaning: string;
  chat: string;
  responses: string;
  anthropic: string;
}

/** Each field's provider mapping: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages. */
const MAPPINGS: Record<string, Mapping> = {
  input: {
    meaning: 'Prompt tokens not read from or written to the cache',
    chat: '`prompt_tokens` − `prompt_tokens_details.cached_tokens`',
    responses: '`input_tokens` − `input_tokens_details.cached_tokens`',
    anthropic: '`input_tokens` (already without the cache)',
  },
  output: {
    meaning: 'Tokens the model wrote, reasoning included',
    chat: '`completion_tokens`',
    responses: '`output_tokens`',
    anthropic: '`output_tokens`',
  },
  reasoning: {
    meaning: 'The reasoning tokens among `output`',
    chat: '`completion_tokens_details.reasoning_tokens`',
    responses: '`output_tokens_details.reasoning_tokens`',
    anthropic: '0 (thinking is counted in `output_tokens`, not apart)',
  },
  cacheRead: {
    meaning: 'Prompt tokens read from the prompt cache',
    chat: '`prompt_tokens_details.cached_tokens`',
    responses: '`input_tokens_details.cached_tokens`',
    anthropic: '`cache_read_input_tokens`',
  },
  cacheWrite: {
    meaning: 'Prompt tokens written to the prompt cache',
    chat: '0: OpenAI charges cache writes as input, so `cache_write_tokens` stay in `input`',
    responses: '0 (as Chat Completions)',
    anthropic: '`cache_creation_input_tokens`',
  },
};

/** The section's lines (markdown, formatted later with the rest of the page). */
export function usageSection(): string[] {
  // The schema's own field descriptions show in the route tables; this table puts the providers side by side.
  const fields = Object.keys((UsageSchema as unknown as z.ZodObject).shape);
  const rows = fields.map((field) => {
    const mapping = MAPPINGS[field];
    if (!mapping) throw new Error(`docs: no provider mapping for usage.${field} (scripts/api-docs-usage.ts)`);
    const cells = [mapping.meaning, mapping.chat, mapping.responses, mapping.anthropic];
    return `| \`${field}\` | ${cells.map((text) => text.replace(/\|/g, '\\|')).join(' | ')} |`;
  });
  return [
    '## Usage',
    '',
    'An assistant message’s `usage` (`POST …/messages`, `PATCH …/messages/{messageId}`, and',
    '`POST …/overflow`) is the provider’s count for the turn’s last model call, in Compactor’s terms.',
    'Compactor calibrates its token estimate with it (`policy.estimate: "hybrid"`: the prompt the',
    'provider counted, plus the stored counts of what was written after), and the prompt-cache',
    'features (cache-aware pruning, the cache effects of a compaction) read `cacheRead` and',
    '`cacheWrite`. The whole prompt is `input + cacheRead + cacheWrite`; `output` includes',
    '`reasoning`. Only `input` and `output` are required, the others default to 0.',
    '',
    'A report never pulls the estimate below Compactor’s own exact count of the stored context: it',
    'may only add what the provider saw and Compactor did not store (a system prompt sent outside',
    'the session, tool schemas, the provider’s framing), at most a quarter of the usable input',
    '(`status.calibrationTokens` shows what it adds now). A report below the stored count changes',
    'nothing. A report no turn of the session’s model can make — a prompt or an output over ten',
    'context windows, or `reasoning` over `output` — is refused with `400 validation_error` naming',
    'the field, and nothing of the request is stored.',
    '',
    '| field | counts | OpenAI Chat Completions | OpenAI Responses | Anthropic Messages |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
    '',
    '**Count the cached tokens once.** OpenAI’s `prompt_tokens` (Responses: `input_tokens`) is the',
    'whole prompt, the cached tokens included; Anthropic’s `input_tokens` leaves them out. Sending',
    'OpenAI’s `prompt_tokens` as `input` and its `cached_tokens` as `cacheRead` counts the cached',
    'prefix twice: Compactor sees a prompt up to twice its size and compacts early (a compaction at',
    'about 6,500 real tokens reported `tokensBefore: 14608`). Sending `prompt_tokens` as `input` with',
    'no `cacheRead` keeps the size right but hides the cache from the features that need it.',
    '',
    'The clients map a provider’s answer for you: `usageFromOpenAI(completion.usage)` and',
    '`usageFromAnthropic(message.usage)` in [`@compactor/client`](../packages/client/README.md#reporting-usage),',
    '`usage_from_openai` and `usage_from_anthropic` in the [Python client](../clients/python/README.md#reporting-usage).',
    'They take Chat Completions’ and the Responses API’s `usage` alike, and turn missing, null,',
    'negative or fractional counts into what the API accepts (0, or rounded).',
    '',
  ];
}
