import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { UsageSchema } from '@compactor/contract';
import { usageSection } from './api-docs-usage';

const page = usageSection().join('\n');

describe('the Usage section of docs/API.md', () => {
  it('maps every usage field for OpenAI Chat Completions, OpenAI Responses and Anthropic', () => {
    const rows = page.split('\n').filter((line) => line.startsWith('| `'));
    const fields = Object.keys((UsageSchema as unknown as z.ZodObject).shape);
    expect(rows.map((row) => /^\| `(\w+)`/.exec(row)![1])).toEqual(fields);
    for (const row of rows) expect(row.split(' | ')).toHaveLength(5);
    const row = (field: string) => rows.find((line) => line.startsWith(`| \`${field}\``))!;
    expect(row('input')).toContain('`prompt_tokens` − `prompt_tokens_details.cached_tokens`');
    expect(row('input')).toContain('`input_tokens` (already without the cache)');
    expect(row('cacheRead')).toContain('`cache_read_input_tokens`');
    expect(row('cacheWrite')).toContain('`cache_creation_input_tokens`');
  });

  it('warns against counting the cached tokens twice and names the helpers', () => {
    expect(page).toContain('**Count the cached tokens once.**');
    for (const helper of [
      'usageFromOpenAI',
      'usageFromAnthropic',
      'usage_from_openai',
      'usage_from_anthropic',
    ])
      expect(page).toContain(helper);
  });
});
