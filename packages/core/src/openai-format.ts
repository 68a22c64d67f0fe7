/**
 * The context rendered as an OpenAI Chat Completions `messages` array, ready to send as is.
 *
 * Our assistant messages hold a whole agent turn: text and tool parts interleaved over several
 * steps, each tool part carrying its call and its result. Chat Completions wants one assistant
 * message per step (`content` + `tool_calls`) followed by one `tool` message per call, so each
 * assistant message is split at every text that follows a tool call.
 */
import { renderMessage, type AssembledContext } from './context';
import { assertNever, type FilePart, type Message, type Part, type ToolPart } from './model';
import { COMPACTION_MARKER_TEXT } from './summary-messages';

/** A content part of a Chat Completions user message: text, or an image by URL. */
export type OpenAIContentPart =
  { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** One `tool_calls` entry; `id` is made valid and unique, so it may differ from the stored `callId`. */
export interface OpenAIToolCall {
  id: string;
  type: 'function';
  /** `arguments` is JSON text, as the API requires. */
  function: { name: string; arguments: string };
}

/** A Chat Completions message, limited to the fields {@link toOpenAIMessages} writes. */
export type OpenAIChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | OpenAIContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAIToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Whether {@link toolCallArguments} writes what a provider can parse or what a reader should see. */
export interface ToolArgumentsOptions {
  /**
   * `object` (default): JSON text of an object, as Chat Completions requires. `display`: how a
   * reader sees it (transcripts, detector prompts): a string as is, nothing for no input,
   * anything else as compact JSON.
   */
  format?: 'object' | 'display';
}

/**
 * A tool call's arguments as text: the one serialiser every renderer uses. In the default
 * `object` format it is the JSON text of an object: inputs stored as JSON text are passed through
 * when they hold an object; anything else that is not an object (a raw patch string, a number)
 * is wrapped as `{ "input": … }` so the provider can parse it. The `display` format shows what
 * the model wrote, unwrapped.
 */
export function toolCallArguments(input: unknown, options: ToolArgumentsOptions = {}): string {
  if (options.format === 'display') {
    if (typeof input === 'string') return input;
    if (input === undefined || input === null) return '';
    try {
      return JSON.stringify(input) ?? String(input);
    } catch {
      return String(input);
    }
  }
  if (input === undefined || input === null) return '{}';
  if (typeof input === 'string') {
    try {
      const parsed: unknown = JSON.parse(input);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return input;
    } catch {
      // not JSON: wrapped below
    }
    return JSON.stringify({ input });
  }
  const wrapped = typeof input === 'object' && !Array.isArray(input) ? input : { input };
  try {
    return JSON.stringify(wrapped);
  } catch {
    // Cycles or BigInt: still an object the provider can parse.
    return JSON.stringify({ input: String(input) });
  }
}

/** OpenAI's rule for function names: `^[a-zA-Z0-9_-]{1,64}$`. */
const TOOL_NAME_LIMIT = 64;
/** OpenAI rejects tool-call ids longer than 40 characters. */
const TOOL_CALL_ID_LIMIT = 40;

/**
 * A stored tool name as OpenAI accepts it: other characters (`.`, `/`, `:`, spaces from MCP
 * servers) become `_`, and the name is cut to 64 characters.
 */
export function openAIToolName(name: string): string {
  const cleaned = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, TOOL_NAME_LIMIT);
  return cleaned === '' ? 'tool' : cleaned;
}

/** 32-bit FNV-1a, as 8 hex digits: a short, stable stand-in for a long id. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/**
 * A tool-call id as OpenAI accepts it. Valid ids pass unchanged; a longer or oddly spelled one
 * is replaced by a readable prefix plus a hash of the whole id, the same for the call and its
 * result, so pairs stay matched.
 */
export function openAIToolCallId(id: string): string {
  if (id.length > 0 && id.length <= TOOL_CALL_ID_LIMIT && /^[a-zA-Z0-9_-]+$/.test(id)) return id;
  const prefix = id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, TOOL_CALL_ID_LIMIT - 10);
  return `${prefix}_${fnv1a(id)}`.replace(/^_/, 'call_');
}

/**
 * Hands out the tool-call ids of one rendered context. Some providers number calls per turn
 * (`call_0` in every turn) and Anthropic rejects a `tool_use` id seen twice, so a repeated id
 * gets a distinct one derived from it and its occurrence (`call_0_2_<hash>`): the same context
 * always renders the same ids, and the call and its result share theirs.
 */
export function toolCallIdAllocator(): (callId: string) => string {
  const used = new Set<string>();
  const occurrences = new Map<string, number>();
  return (callId) => {
    const base = openAIToolCallId(callId);
    let id = base;
    let occurrence = occurrences.get(base) ?? 1;
    while (used.has(id)) {
      occurrence += 1;
      id = openAIToolCallId(`${base}#${occurrence}`);
    }
    occurrences.set(base, occurrence);
    used.add(id);
    return id;
  };
}

/** What the model reads as a tool call's result (after {@link renderMessage}). */
export function toolResultContent(part: ToolPart): string {
  switch (part.status) {
    case 'completed':
      return part.output === null || part.output === '' ? '(no output)' : part.output;
    case 'error':
      return part.error ?? 'Tool error';
    case 'pending':
    case 'running':
      // renderMessage has turned these into interrupted errors; kept for exhaustiveness.
      return part.error ?? '';
    default:
      return assertNever(part.status, 'tool status');
  }
}

function fileNote(part: FilePart): string {
  return `[Attached file: ${part.filename ?? 'unnamed'} (${part.mime})]`;
}

/**
 * A part as text where no block of its own fits (a file in a system message, a tool part on a
 * user message): the note every provider rendering writes.
 */
export function partAsNote(part: Exclude<Part, { type: 'reasoning' }>): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'file':
      return fileNote(part);
    case 'compaction':
      return COMPACTION_MARKER_TEXT;
    case 'tool':
      return `[Tool call ${part.tool}(${toolCallArguments(part.input)}) returned: ${toolResultContent(part)}]`;
    default:
      return assertNever(part, 'part');
  }
}

function renderUser(message: Message): OpenAIChatMessage[] {
  const content: OpenAIContentPart[] = [];
  for (const part of message.parts) {
    if (part.type === 'reasoning') continue;
    if (part.type === 'file' && part.mime.startsWith('image/')) {
      content.push({ type: 'image_url', image_url: { url: part.url } });
      continue;
    }
    const text = partAsNote(part);
    if (text.trim() !== '') content.push({ type: 'text', text });
  }
  if (content.length === 0) return [];
  if (content.every((part) => part.type === 'text')) {
    return [{ role: 'user', content: content.map((part) => part.text).join('\n\n') }];
  }
  return [{ role: 'user', content }];
}

function renderSystem(message: Message): OpenAIChatMessage[] {
  const text = message.parts
    .flatMap((part) => (part.type === 'reasoning' ? [] : [partAsNote(part)]))
    .filter((piece) => piece.trim() !== '')
    .join('\n\n');
  return text === '' ? [] : [{ role: 'system', content: text }];
}

/**
 * The files of a message that belong to its tool calls' results, by call id: renderings put them
 * in the result of that call, wherever they sit among the parts. A file naming no call of the
 * message is not in the map and renders as any other file.
 */
export function resultFilesByCall(message: Message): Map<string, FilePart[]> {
  const files = new Map<string, FilePart[]>();
  const calls = new Set(message.parts.flatMap((part) => (part.type === 'tool' ? [part.callId] : [])));
  for (const part of message.parts) {
    if (part.type !== 'file' || part.callId === undefined || !calls.has(part.callId)) continue;
    files.set(part.callId, [...(files.get(part.callId) ?? []), part]);
  }
  return files;
}

/** Whether `part` is one of the result files {@link resultFilesByCall} found. */
export function isResultFile(part: Part, files: ReadonlyMap<string, FilePart[]>): boolean {
  return part.type === 'file' && part.callId !== undefined && files.has(part.callId);
}

/**
 * What Chat Completions gets of a call's result files: a `tool` message holds text only, so the
 * images follow its call's results as a user message that names the call, and other files are a
 * note in the tool message's text.
 */
function resultImages(callId: string, files: readonly FilePart[]): OpenAIChatMessage[] {
  const images = files.filter((file) => file.mime.startsWith('image/'));
  if (images.length === 0) return [];
  return [
    {
      role: 'user',
      content: [
        { type: 'text', text: `[Images returned by tool call ${callId}]` },
        ...images.map((file): OpenAIContentPart => ({ type: 'image_url', image_url: { url: file.url } })),
      ],
    },
  ];
}

function resultText(call: ToolPart, files: readonly FilePart[]): string {
  const notes = files.filter((file) => !file.mime.startsWith('image/')).map(fileNote);
  return [toolResultContent(call), ...notes].join('\n\n');
}

function renderAssistant(message: Message, allocateId: (callId: string) => string): OpenAIChatMessage[] {
  const out: OpenAIChatMessage[] = [];
  const files = resultFilesByCall(message);
  let texts: string[] = [];
  let calls: ToolPart[] = [];
  const flushStep = (): void => {
    if (texts.length === 0 && calls.length === 0) return;
    const content = texts.length === 0 ? null : texts.join('\n\n');
    if (calls.length === 0) {
      out.push({ role: 'assistant', content });
    } else {
      const ids = calls.map((call) => allocateId(call.callId));
      const toolCalls = calls.map((call, i) => ({
        id: ids[i] as string,
        type: 'function' as const,
        function: { name: openAIToolName(call.tool), arguments: toolCallArguments(call.input) },
      }));
      out.push({ role: 'assistant', content, tool_calls: toolCalls });
      calls.forEach((call, i) => {
        const own = files.get(call.callId) ?? [];
        out.push({ role: 'tool', tool_call_id: ids[i] as string, content: resultText(call, own) });
      });
      // After every tool message of the step: a user message between them would split the results.
      calls.forEach((call, i) => out.push(...resultImages(ids[i] as string, files.get(call.callId) ?? [])));
    }
    texts = [];
    calls = [];
  };
  for (const part of message.parts) {
    if (part.type === 'reasoning') continue;
    if (part.type === 'tool') {
      calls.push(part);
      continue;
    }
    if (isResultFile(part, files)) continue;
    const text = partAsNote(part);
    if (text.trim() === '') continue;
    // A text after tool calls belongs to the next step: the calls' results come first.
    if (calls.length > 0) flushStep();
    texts.push(text);
  }
  flushStep();
  return out;
}

/**
 * The Chat Completions `messages` for a context (an {@link AssembledContext} or its messages):
 * system messages stay system; user messages become text, or content parts when they carry
 * images (other files become a text note); assistant messages are split into
 * `assistant(content, tool_calls) → tool(tool_call_id) … → assistant …` in part order, with
 * `arguments` as JSON text; reasoning is dropped; the compaction marker reads as a system note,
 * not as a user question. Pruning and interrupted calls are rendered here too, so raw messages
 * are safe to pass. Messages with nothing to say are left out (providers reject empty content).
 * Tool-call ids are made valid ({@link openAIToolCallId}) and unique across the whole array: a
 * repeated id gets a stable distinct one, on its call and its result alike.
 */
export function toOpenAIMessages(context: AssembledContext | readonly Message[]): OpenAIChatMessage[] {
  const messages: readonly Message[] = 'messages' in context ? context.messages : context;
  const allocateId = toolCallIdAllocator();
  return messages.flatMap((stored) => {
    const message = renderMessage(stored);
    switch (message.role) {
      case 'system':
        return renderSystem(message);
      case 'user':
        return renderUser(message);
      case 'assistant':
        return renderAssistant(message, allocateId);
      default:
        return assertNever(message.role, 'role');
    }
  });
}
