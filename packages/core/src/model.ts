/**
 * The stored conversation model every package shares.
 *
 * These are plain data, shaped like the HTTP API's messages (docs/API.md) plus what
 * the store adds at write time: a per-session `seq` and a token count per part. Tool results are
 * not separate messages: as in OpenCode, a `tool` part on an assistant message carries both the
 * call (`input`) and its result (`output` / `error`). Renderers split them into provider messages.
 */
import { clearedOutputMarker } from '@compactor/contract';

/** Who wrote a message. There is no `tool` role: results live on the assistant's tool parts. */
export type Role = 'user' | 'assistant' | 'system';

/** Lifecycle of a tool call, as streamed by the agent: `pending → running → completed | error`. */
export type ToolStatus = 'pending' | 'running' | 'completed' | 'error';

/** Why an assistant turn ended. `null` while a turn is still streaming. */
export type Finish = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'error' | 'other';

/**
 * Provider usage of one assistant message, normalised: the report of its **last step** (the last
 * provider call; a message holds several steps when a text follows its tool calls, see
 * openai-format.ts), not a sum over steps. `input` excludes cache reads and writes (Anthropic's
 * convention; OpenAI's `prompt_tokens` must be split by the client or the adapter): the prompt
 * of that call was `input + cacheRead + cacheWrite` tokens long. `output` counts every generated
 * token, reasoning included (OpenAI's `completion_tokens`, Anthropic's `output_tokens`; add
 * Gemini's `thoughtsTokenCount` to its `candidatesTokenCount`); `reasoning` is the part of
 * `output` that was reasoning (0 when unknown). Later prompts drop reasoning, so the context
 * this call leaves is `prompt + max(0, output − reasoning)` (tokens.ts `reportedContextTokens`).
 */
export interface Usage {
  input: number;
  output: number;
  reasoning: number;
  cacheRead: number;
  cacheWrite: number;
}

/** Plain text content, in a message of any role. */
export interface TextPart {
  type: 'text';
  text: string;
  /** Exact tokens of `text`, counted once at write time. */
  tokens: number;
}

/** An assistant's reasoning: stored and counted; `toOpenAIMessages` drops it, transcripts do by default. */
export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  tokens: number;
}

/**
 * One tool call **with its result**: a tool part always carries its own call (`input`) and, once
 * finished, its result (`output` / `error`) — never a result for a call stored elsewhere. The
 * API rejects at ingest a tool part whose `callId` matches a pending or running tool part of an
 * earlier message; a client that learns a result later PATCHes the original message instead.
 * So a cut at any message boundary keeps every call with its result.
 */
export interface ToolPart {
  type: 'tool';
  /** Provider tool-call id, as the client sent it; the result is in this part, not matched by id. */
  callId: string;
  tool: string;
  status: ToolStatus;
  /** Call arguments as the model produced them (usually an object). */
  input: unknown;
  /** Result text when `status === 'completed'`; kept in storage even after pruning. */
  output: string | null;
  /** Error text when `status === 'error'`. */
  error: string | null;
  /** ISO time the part was pruned (lazy deletion); `null` while its output is shown. */
  compactedAt: string | null;
  /** Exact tokens of the whole part as sent: tool name + serialised input + output or error. */
  tokens: number;
  /** Exact tokens of `output` alone: what pruning saves. */
  outputTokens: number;
}

/** An attached file by URL: Chat Completions renderings send images as `image_url`, others as a text note. */
export interface FilePart {
  type: 'file';
  mime: string;
  filename: string | null;
  url: string;
  tokens: number;
  /**
   * Set when the file is part of a tool call's result (an image an MCP tool or an Anthropic
   * `tool_result` returned): the id of that call, whose tool part is in the same message.
   * Renderings put it in the call's result; absent for a file the message itself attaches.
   */
  callId?: string | undefined;
}

/** Marks the user message that asked for a compaction (OpenCode's `CompactionPart`). */
export interface CompactionPart {
  type: 'compaction';
  /** Whether the compaction was triggered automatically rather than by a request. */
  auto: boolean;
  tokens: number;
}

/** One piece of a message, discriminated by `type`; parts stay in the order the agent produced them. */
export type Part = TextPart | ReasoningPart | ToolPart | FilePart | CompactionPart;
/** The `type` tag of a {@link Part}. */
export type PartType = Part['type'];

/** Why an assistant turn failed, as the agent reported it (the API also accepts a bare string). */
export interface MessageError {
  message: string;
  code?: string | undefined;
}

/** A stored message: the API's message plus the store's `seq` and per-part token counts. */
export interface Message {
  /** Client id (or a generated one); unique within a session. */
  id: string;
  /** Per-session, strictly increasing, assigned by the store. */
  seq: number;
  role: Role;
  parts: Part[];
  finish: Finish | null;
  error: MessageError | null;
  usage: Usage | null;
  /** ISO-8601. */
  createdAt: string;
  metadata: Record<string, unknown>;
  /** `true` for messages written by a compaction (its request marker and its summary). */
  summary: boolean;
  compactionId: string | null;
}

/**
 * Lifecycle `pending → running → completed | failed | skipped`, and `completed → reverted` when a
 * client undoes it; only `completed` moves the boundary.
 */
export type CompactionStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'reverted';
/** What asked for a compaction: the auto trigger, a manual request, or a context overflow (an emergency). */
export type CompactionReason = 'auto' | 'manual' | 'overflow';
/** How the range is replaced: an LLM summary, an LLM-free one (Opal's truncate), or topic mode (docs/PRESETS.md, `topic`). */
export type CompactionStrategy = 'summarize' | 'truncate' | 'topic';
/** The workflow steps, in run order; each attempt records one `compaction_steps` row per step it runs. */
export type CompactionStep = 'prune' | 'summarize' | 'finalize';

/**
 * What the context view needs to know about a compaction. A completed compaction establishes a
 * boundary: its summary message(s), then every non-summary message with `seq >= boundarySeq`.
 * `boundarySeq` is `null` when the compaction kept nothing but its summary (e.g. after a cut
 * with no recent messages); `summaryMessageIds` is empty for a truncate-only (topic) compaction
 * that dropped old messages without a summary.
 */
export interface CompactionBoundary {
  id: string;
  status: CompactionStatus;
  /** First kept message seq; messages before it are hidden from the model. */
  boundarySeq: number | null;
  /** Ids of the messages this compaction wrote (request marker and summary), in order. */
  summaryMessageIds: string[];
  /** ISO time the compaction completed; orders compactions. */
  finishedAt: string | null;
}

/** The model a session talks to. */
/** USD per million tokens. `cacheWrite` is what storing a prefix costs (the input price where writing is free). */
export interface ModelPricing {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * How a provider caches prompts: `explicit` (Anthropic: the client marks breakpoints, writes cost
 * extra), `automatic` (OpenAI, Gemini, DeepSeek: prefixes are cached on their own, writes cost
 * the input price), `none`. `ttlSeconds`: how long a cached prefix lives without being read.
 */
export interface CacheBehaviour {
  kind: 'explicit' | 'automatic' | 'none';
  ttlSeconds: number;
}

export interface ModelInfo {
  id: string;
  provider: string;
  /** Context window in tokens; 0 means unlimited. */
  contextWindow: number;
  maxOutputTokens: number;
  /** Hard input limit when the provider has one separate from the window. */
  inputLimit: number | null;
}

/**
 * Text shown to the model in place of a pruned tool output: OpenCode's wording, plus the call id
 * that recalls the original (`GET /v1/sessions/:id/recall?callId=`), which stays stored.
 */
export const prunedOutputMarker: (callId: string) => string = clearedOutputMarker;

/** Result shown for a tool call that never finished (OpenCode's wording). */
export const INTERRUPTED_TOOL_RESULT = '[Tool execution was interrupted]';

/** Narrows a part to a {@link ToolPart}. */
export function isToolPart(part: Part): part is ToolPart {
  return part.type === 'tool';
}

/** Exhaustiveness check for discriminated unions. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
