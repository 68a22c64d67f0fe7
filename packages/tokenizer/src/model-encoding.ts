import type { EncodingName } from './encodings';

/**
 * Model families that tokenize with cl100k_base (GPT-4 before 4o, GPT-3.5, the OpenAI embedding
 * models, the 002 base models). `gpt-4` must be followed by `-` or the end, so that `gpt-4o`,
 * `gpt-4.1` and `gpt-4.5` fall through to o200k_base.
 */
const CL100K_MODEL =
  /^(?:gpt-4(?:-|$)|gpt-3\.5|gpt-35|text-embedding-(?:ada-002|3-)|(?:davinci|babbage)-002)/;

/**
 * The encoding tiktoken uses for `modelId`. Accepts provider prefixes (`openai/gpt-4o`,
 * `azure/gpt-35-turbo`) and fine-tune ids (`ft:gpt-4o-mini-2024-07-18:org::id`). GPT-4 and
 * GPT-3.5 give cl100k_base; gpt-4o, o1/o3/o4, gpt-4.1, gpt-4.5, gpt-5 and every model it does not
 * know give o200k_base, the encoding of current models, so counts of unknown models err towards
 * the present rather than the past.
 */
export function encodingForModel(modelId: string): EncodingName {
  const withoutProvider = modelId.trim().toLowerCase().split('/').pop() ?? '';
  const baseModel = withoutProvider.startsWith('ft:') ? withoutProvider.slice(3) : withoutProvider;
  return CL100K_MODEL.test(baseModel) ? 'cl100k_base' : 'o200k_base';
}
