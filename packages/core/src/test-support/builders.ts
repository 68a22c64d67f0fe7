/**
 * Small builders for test conversations. Every builder returns plain model.ts data with obvious
 * defaults; `conversation()` numbers the messages (seq 1, 2, …, ids `m1`, `m2`, …, call ids
 * `call_<seq>_<n>`) wherever a builder left them unset, and `message()` builds one at a seq the
 * test chooses. Other packages' tests import them as `@compactor/core/testing`.
 */
import type { Message, ModelInfo, Part, TextPart, ToolPart, ToolStatus, Usage } from '../model';

type MessageExtras = Partial<Omit<Message, 'role' | 'parts'>>;

/** Tokens of a text by the usual estimate: length / 4. */
const estimate = (value: string): number => Math.round(value.length / 4);

/** A text part; `tokens` defaults to text length / 4. */
export function text(value: string, tokens = estimate(value)): TextPart {
  return { type: 'text', text: value, tokens };
}

export interface ToolPartOptions {
  callId?: string;
  status?: ToolStatus;
  /** ISO time the output was pruned. */
  compactedAt?: string | null;
  /** Tokens of the whole part; defaults to `outputTokens + 10` (name and arguments). */
  tokens?: number;
  input?: unknown;
  /** The output text; defaults to `output of <tool>` when completed, null otherwise. */
  output?: string | null;
  error?: string | null;
}

/** A tool part whose output is `outputTokens` tokens long (completed unless said otherwise). */
export function toolPart(tool: string, outputTokens: number, options: ToolPartOptions = {}): ToolPart {
  const status = options.status ?? 'completed';
  return {
    type: 'tool',
    callId: options.callId ?? '',
    tool,
    status,
    input: options.input ?? {},
    output:
      options.output !== undefined ? options.output : status === 'completed' ? `output of ${tool}` : null,
    error: options.error ?? null,
    compactedAt: options.compactedAt ?? null,
    tokens: options.tokens ?? outputTokens + 10,
    outputTokens: status === 'completed' ? outputTokens : 0,
  };
}

/**
 * A tool call with its real arguments and output (completed unless said otherwise; a failed
 * call's output is its error), its tokens estimated from name, arguments and output like `text`.
 */
export function toolCall(
  tool: string,
  input: unknown,
  output: string,
  status: ToolStatus = 'completed',
): ToolPart {
  return toolPart(tool, estimate(output), {
    status,
    input,
    output: status === 'completed' ? output : null,
    error: status === 'error' ? output : null,
    tokens: estimate(tool + JSON.stringify(input) + output),
  });
}

function build(role: Message['role'], parts: Part[], extras: MessageExtras): Message {
  return {
    id: '',
    seq: 0,
    finish: role === 'assistant' ? 'stop' : null,
    error: null,
    usage: null,
    createdAt: '2025-01-01T00:00:00.000Z',
    metadata: {},
    summary: false,
    compactionId: null,
    ...extras,
    role,
    parts,
  };
}

/** A message at `seq` (id `m<seq>`) with the given role and parts. */
export function message(
  seq: number,
  role: Message['role'],
  parts: Part[],
  extras: MessageExtras = {},
): Message {
  return build(role, parts, { id: `m${seq}`, seq, ...extras });
}

/** A user message of one text part with `tokens` tokens. */
export function user(value: string, tokens?: number, extras: MessageExtras = {}): Message {
  return build('user', [text(value, tokens)], extras);
}

/** A system message the client stored (pinned by default: policy `pinSystemMessages`). */
export function system(value: string, tokens?: number, extras: MessageExtras = {}): Message {
  return build('system', [text(value, tokens)], extras);
}

/** An assistant message from parts, or from a text with `tokens` tokens. */
export function assistant(
  content: Part[] | string,
  extras: MessageExtras & { tokens?: number } = {},
): Message {
  const { tokens, ...rest } = extras;
  const parts = typeof content === 'string' ? [text(content, tokens)] : content;
  const finish = parts.some((part) => part.type === 'tool') ? 'tool-calls' : 'stop';
  return build('assistant', parts, { finish, ...rest });
}

/** A compaction's summary message (OpenCode style: an assistant message with `summary: true`). */
export function summary(value: string, tokens?: number, extras: MessageExtras = {}): Message {
  return build('assistant', [text(value, tokens)], { summary: true, compactionId: 'cmp_1', ...extras });
}

/** Provider usage; everything not given is 0. */
export function usage(input: number, output: number, extras: Partial<Usage> = {}): Usage {
  return { input, output, reasoning: 0, cacheRead: 0, cacheWrite: 0, ...extras };
}

/** A model with the given window, max output and optional input limit. */
export function model(
  contextWindow: number,
  maxOutputTokens: number,
  inputLimit: number | null = null,
): ModelInfo {
  return { id: 'test-model', provider: 'test', contextWindow, maxOutputTokens, inputLimit };
}

/**
 * Messages numbered in order: seq from `firstSeq` (unless set), id `m<seq>`, and call ids
 * `call_<seq>_<n>` for tool parts that have none.
 */
export function conversation(messages: readonly Message[], firstSeq = 1): Message[] {
  return messages.map((original, index) => {
    const seq = original.seq || firstSeq + index;
    let toolIndex = 0;
    const parts = original.parts.map((part) =>
      part.type === 'tool' && part.callId === '' ? { ...part, callId: `call_${seq}_${toolIndex++}` } : part,
    );
    return { ...original, seq, id: original.id || `m${seq}`, parts };
  });
}

/** Numbered messages of the given roles and tokens: `u` user, `a` assistant, `s` summary. */
export function messages(spec: string, tokens: number | number[]): Message[] {
  return conversation(
    [...spec].map((role, index) => {
      const count = Array.isArray(tokens) ? tokens[index]! : tokens;
      if (role === 'u') return user(`u${index}`, count);
      if (role === 's') return summary(`s${index}`, count);
      return assistant(`a${index}`, { tokens: count });
    }),
  );
}
