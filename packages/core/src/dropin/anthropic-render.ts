/**
 * The served context as an Anthropic Messages request: `system` text and messages that strictly
 * alternate user/assistant starting with user, each `tool_use` answered by its `tool_result` in
 * the next user message, thinking blocks sent back with the signature they came with.
 */
import { renderMessage } from '../context';
import { assertNever, type FilePart, type Message, type Part, type ToolPart } from '../model';
import {
  isResultFile,
  openAIToolName,
  partAsNote,
  resultFilesByCall,
  toolCallArguments,
  toolCallIdAllocator,
  toolResultContent,
} from '../openai-format';
import { readAnthropicMetadata, REDACTED_THINKING_TEXT, type AnthropicMetadata } from './anthropic-metadata';
import type { Json } from './read-input';

type ImageOrDocumentSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string }
  | { type: 'text'; media_type: 'text/plain'; data: string };

/** A content block, limited to what {@link toAnthropicMessages} writes (kept blocks go back as they came). */
export type AnthropicContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: ImageOrDocumentSource }
  | { type: 'document'; source: ImageOrDocumentSource; title?: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content: string | AnthropicContentBlock[];
      is_error?: true;
    }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | ({ type: string } & Json);

export interface AnthropicMessageParam {
  role: 'user' | 'assistant';
  content: AnthropicContentBlock[];
}

/** Opens the messages when the served context starts with the model's turn (Anthropic requires a user turn first). */
export const ANTHROPIC_CONTINUATION_TEXT = '[The conversation continues from earlier messages.]';

/**
 * The context as `system` + `messages`. The leading system messages (pinned first in a served
 * context) become `system`; a later one is read as user text, since Messages has no system turn.
 * Tool parts render as OpenAI's do (pruned → the cleared marker, unfinished → the interrupted
 * error); ids are made valid and unique for the whole request; consecutive same-role messages
 * are merged.
 */
export function toAnthropicMessages(context: { messages: readonly Message[] }): {
  system: string | undefined;
  messages: AnthropicMessageParam[];
} {
  const allocateId = toolCallIdAllocator();
  const systemTexts: string[] = [];
  const out: AnthropicMessageParam[] = [];
  const push = (role: AnthropicMessageParam['role'], blocks: AnthropicContentBlock[]): void => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  let leading = true;
  for (const stored of context.messages) {
    const message = renderMessage(stored);
    if (message.role !== 'system') leading = false;
    switch (message.role) {
      case 'system': {
        const text = noteTexts(message.parts).join('\n\n');
        if (text === '') break;
        if (leading) systemTexts.push(text);
        else push('user', [{ type: 'text', text }]);
        break;
      }
      case 'user':
        push('user', userBlocks(message));
        break;
      case 'assistant':
        renderAssistant(message, allocateId, push);
        break;
      default:
        assertNever(message.role, 'role');
    }
  }
  if (out[0]?.role === 'assistant')
    out.unshift({ role: 'user', content: [{ type: 'text', text: ANTHROPIC_CONTINUATION_TEXT }] });
  return { system: systemTexts.length === 0 ? undefined : systemTexts.join('\n\n'), messages: out };
}

type Item = { kind: 'part'; part: Part } | { kind: 'kept'; block: Json };

/** The message's parts with its kept blocks back where they were. */
function items(message: Message, meta: AnthropicMetadata): Item[] {
  const out: Item[] = [];
  const kept = [...meta.kept].sort((a, b) => a.after - b.after);
  let next = 0;
  message.parts.forEach((part, index) => {
    while (next < kept.length && kept[next]!.after <= index)
      out.push({ kind: 'kept', block: kept[next++]!.block });
    out.push({ kind: 'part', part });
  });
  while (next < kept.length) out.push({ kind: 'kept', block: kept[next++]!.block });
  return out;
}

function userBlocks(message: Message): AnthropicContentBlock[] {
  const meta = readAnthropicMetadata(message.metadata);
  return items(message, meta).flatMap((item): AnthropicContentBlock[] => {
    if (item.kind === 'kept') return [item.block as AnthropicContentBlock];
    const { part } = item;
    if (part.type === 'reasoning') return [];
    if (part.type === 'file') return [fileBlock(part)];
    const text = partAsNote(part);
    return text.trim() === '' ? [] : [{ type: 'text', text }];
  });
}

function renderAssistant(
  message: Message,
  allocateId: (callId: string) => string,
  push: (role: AnthropicMessageParam['role'], blocks: AnthropicContentBlock[]) => void,
): void {
  const meta = readAnthropicMetadata(message.metadata);
  const files = resultFilesByCall(message);
  const thinking = [...meta.thinking];
  const redacted = [...meta.redacted];
  let blocks: AnthropicContentBlock[] = [];
  let results: AnthropicContentBlock[] = [];
  // A text or thinking after tool calls starts the next step: the calls' results come first.
  const flush = (): void => {
    push('assistant', blocks);
    push('user', results);
    blocks = [];
    results = [];
  };
  for (const item of items(message, meta)) {
    if (item.kind === 'kept') {
      blocks.push(item.block as AnthropicContentBlock);
      continue;
    }
    const { part } = item;
    if (part.type === 'tool') {
      const id = allocateId(part.callId);
      blocks.push({ type: 'tool_use', id, name: openAIToolName(part.tool), input: toolInput(part) });
      results.push(toolResult(id, part, files.get(part.callId) ?? []));
      continue;
    }
    if (isResultFile(part, files)) continue;
    if (results.length > 0) flush();
    if (part.type === 'reasoning') {
      // Only a thinking block with the signature it came with can be sent back; others are dropped.
      const signed = thinking.findIndex((entry) => entry.thinking === part.text);
      if (signed >= 0) {
        const [entry] = thinking.splice(signed, 1);
        blocks.push({ type: 'thinking', thinking: entry!.thinking, signature: entry!.signature });
      } else if (part.text === REDACTED_THINKING_TEXT && redacted.length > 0) {
        blocks.push({ type: 'redacted_thinking', data: redacted.shift()! });
      }
      continue;
    }
    const text = partAsNote(part);
    if (text.trim() !== '') blocks.push({ type: 'text', text });
  }
  flush();
}

/** `tool_use.input` must be an object: the same object rule as Chat Completions arguments. */
function toolInput(part: ToolPart): Record<string, unknown> {
  return JSON.parse(toolCallArguments(part.input)) as Record<string, unknown>;
}

/** A call's result: its text, and the images and documents it returned as blocks after it. */
function toolResult(id: string, part: ToolPart, files: readonly FilePart[]): AnthropicContentBlock {
  const text = toolResultContent(part);
  const content: string | AnthropicContentBlock[] =
    files.length === 0 ? text : [{ type: 'text', text }, ...files.map(fileBlock)];
  return part.status === 'error'
    ? { type: 'tool_result', tool_use_id: id, content, is_error: true }
    : { type: 'tool_result', tool_use_id: id, content };
}

function noteTexts(parts: readonly Part[]): string[] {
  return parts
    .flatMap((part) => (part.type === 'reasoning' ? [] : [partAsNote(part)]))
    .filter((text) => text.trim() !== '');
}

/** An image or PDF as its block by the source its URL names; any other file as a note. */
function fileBlock(part: FilePart): AnthropicContentBlock {
  const source = fileSource(part);
  if (source === null) return { type: 'text', text: partAsNote(part) };
  if (part.mime.startsWith('image/') && source.type !== 'text') return { type: 'image', source };
  if (part.mime === 'application/pdf' || source.type === 'text') {
    return part.filename === null
      ? { type: 'document', source }
      : { type: 'document', source, title: part.filename };
  }
  return { type: 'text', text: partAsNote(part) };
}

function fileSource(part: FilePart): ImageOrDocumentSource | null {
  const base64 = /^data:([\w.+-]+\/[\w.+-]+);base64,(.*)$/s.exec(part.url);
  if (base64) return { type: 'base64', media_type: base64[1]!, data: base64[2]! };
  const plain = /^data:text\/plain(?:;charset=utf-8)?,(.*)$/s.exec(part.url);
  if (plain) {
    try {
      return { type: 'text', media_type: 'text/plain', data: decodeURIComponent(plain[1]!) };
    } catch {
      return null;
    }
  }
  if (part.url.startsWith('anthropic-file:'))
    return { type: 'file', file_id: part.url.slice('anthropic-file:'.length) };
  if (/^https?:\/\//i.test(part.url)) return { type: 'url', url: part.url };
  return null;
}
