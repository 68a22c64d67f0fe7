// Public surface of @compactor/tokenizer: exact token counts for o200k_base and cl100k_base.
export { ENCODING_NAMES, type EncodingName } from './encodings';
export { encodingForModel } from './model-encoding';
export { getTokenizer, type CountOptions, type Tokenizer } from './tokenizer';
