/**
 * Anthropic Messages `system` + `messages` → conversation elements. The canonical form keeps
 * text, tool_use ids, names and inputs, tool_result ids, contents and error flags, thinking text
 * with its signature, redacted thinking data and image/document sources; it drops
 * `cache_control` (agents move their breakpoints every turn), `citations`, absent-vs-null fields,
 * `is_error: false`, and string content vs one text block.
 */
import type { PartInput } from '@compactor/contract';
import {
  anthropicMetadata,
  emptyAnthropicMetadata,
  REDACTED_THINKING_TEXT,
  type AnthropicMetadata,
} from './anthropic-metadata';
import { chainElements, type ConversationElement, type ElementDraft, type ToolResultWrite } from './elements';
import { DropInInputError } from './input-error';
import {
  array,
  boundedParts,
  callId,
  dataUrlMime,
  optionalText,
  record,
  storableJson,
  text,
  toolName,
  type Json,
  type Path,
} from './read-input';

/** The elements of a Messages request: its `system` (element 0 when it says anything), then `messages`. */
export function anthropicElements(system: unknown, messages: unknown): ConversationElement[] {
  const drafts: ElementDraft[] = [];
  const systemBlocks = textBlocks(system, ['system']);
  if (systemBlocks.length > 0) drafts.push(systemDraft(systemBlocks, ['system']));
  array(messages, ['messages']).forEach((message, index) =>
    drafts.push(anthropicMessageDraft(message, ['messages', index])),
  );
  return chainElements(drafts);
}

/** The draft of a Messages request's `system` field: element 0, or null when it says nothing (no element). */
export function anthropicSystemDraft(system: unknown): ElementDraft | null {
  const blocks = textBlocks(system, ['system']);
  return blocks.length > 0 ? systemDraft(blocks, ['system']) : null;
}

/** One Messages message (request shape, or a response's `role` + `content`) as an element draft. */
export function anthropicMessageDraft(value: unknown, path: Path): ElementDraft {
  const message = record(value, path);
  const role = message['role'];
  if (role === 'system') {
    return systemDraft(textBlocks(message['content'], [...path, 'content']), [...path, 'content']);
  }
  if (role !== 'user' && role !== 'assistant') {
    throw new DropInInputError([...path, 'role'], 'must be "user" or "assistant"');
  }
  const content = [...path, 'content'];
  const blocks: unknown[] =
    typeof message['content'] === 'string'
      ? [{ type: 'text', text: text(message['content'], content) }]
      : array(message['content'], content);
  const reader = new BlockReader(role);
  blocks.forEach((block, i) => reader.read(block, [...content, i]));
  const parts = boundedParts(reader.parts, content);
  return {
    role,
    canonical: { content: reader.canonical, role },
    // A user message of tool results only adds no message: the results complete earlier calls.
    message:
      parts.length === 0 && reader.meta.kept.length === 0 && reader.results.length > 0
        ? null
        : { role, parts, ...anthropicMetadata(reader.meta) },
    toolResults: reader.results,
  };
}

function systemDraft(blocks: { type: 'text'; text: string }[], path: Path): ElementDraft {
  const parts = blocks.map((block): PartInput => ({ type: 'text', text: block.text }));
  return {
    role: 'system',
    canonical: { content: blocks, role: 'system' },
    message: { role: 'system', parts: boundedParts(parts, path) },
    toolResults: [],
  };
}

/** A string or text blocks, empty texts left out. */
function textBlocks(value: unknown, path: Path): { type: 'text'; text: string }[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value === '' ? [] : [{ text: text(value, path), type: 'text' }];
  return array(value, path).flatMap((item, i) => {
    const block = record(item, [...path, i]);
    if (block['type'] !== 'text') throw new DropInInputError([...path, i, 'type'], 'must be "text" here');
    const value = text(block['text'], [...path, i, 'text']);
    return value === '' ? [] : [{ text: value, type: 'text' as const }];
  });
}

/** Reads one message's blocks in order into its canonical form, parts, results and kept metadata. */
class BlockReader {
  readonly canonical: unknown[] = [];
  readonly parts: PartInput[] = [];
  readonly results: ToolResultWrite[] = [];
  readonly meta: AnthropicMetadata = emptyAnthropicMetadata();
  private readonly callIds = new Set<string>();

  constructor(private readonly role: 'user' | 'assistant') {}

  read(value: unknown, path: Path): void {
    const block = record(value, path);
    const type = text(block['type'], [...path, 'type']);
    switch (type) {
      case 'text': {
        const value = text(block['text'], [...path, 'text']);
        if (value === '') return;
        this.canonical.push({ text: value, type });
        this.parts.push({ type: 'text', text: value });
        return;
      }
      case 'image':
      case 'document':
        return this.file(block, type, path);
      case 'tool_result':
        return this.toolResult(block, path);
      case 'tool_use':
        return this.toolUse(block, path);
      case 'thinking': {
        this.only('assistant', type, path);
        const thinking = text(block['thinking'], [...path, 'thinking']);
        const signature = optionalText(block['signature'], [...path, 'signature']);
        this.canonical.push({ signature, thinking, type });
        this.parts.push({ type: 'reasoning', text: thinking });
        if (signature) this.meta.thinking.push({ thinking, signature });
        return;
      }
      case 'redacted_thinking': {
        this.only('assistant', type, path);
        const data = text(block['data'], [...path, 'data']);
        this.canonical.push({ type, data });
        this.parts.push({ type: 'reasoning', text: REDACTED_THINKING_TEXT });
        this.meta.redacted.push(data);
        return;
      }
      default: {
        // Server tool use and its results, search results, …: no part of ours, sent back as they came.
        const kept = verbatim(block, path);
        this.canonical.push(canonicalKept(kept));
        this.meta.kept.push({ after: this.parts.length, block: kept });
      }
    }
  }

  private only(role: 'user' | 'assistant', type: string, path: Path): void {
    if (this.role !== role)
      throw new DropInInputError([...path, 'type'], `${type} blocks belong to ${role} messages`);
  }

  private file(block: Json, type: 'image' | 'document', path: Path): void {
    const source = storableJson(record(block['source'], [...path, 'source']), [...path, 'source']) as Json;
    const title = optionalText(block['title'], [...path, 'title']);
    const context = optionalText(block['context'], [...path, 'context']);
    this.canonical.push({ context, source, title, type });
    const part = filePart(source, type, title, [...path, 'source']);
    if (part) this.parts.push(part);
    else this.meta.kept.push({ after: this.parts.length, block: verbatim(block, path) });
  }

  private toolUse(block: Json, path: Path): void {
    this.only('assistant', 'tool_use', path);
    const id = callId(block['id'], [...path, 'id']);
    if (this.callIds.has(id)) throw new DropInInputError([...path, 'id'], `duplicate tool_use id ${id}`);
    this.callIds.add(id);
    const name = toolName(block['name'], [...path, 'name']);
    const input = storableJson(record(block['input'] ?? {}, [...path, 'input']), [...path, 'input']);
    this.canonical.push({ id, input, name, type: 'tool_use' });
    this.parts.push({
      type: 'tool',
      callId: id,
      tool: name,
      status: 'pending',
      input,
      output: null,
      error: null,
    });
  }

  private toolResult(block: Json, path: Path): void {
    this.only('user', 'tool_result', path);
    const id = callId(block['tool_use_id'], [...path, 'tool_use_id']);
    const raw = block['content'];
    const at = [...path, 'content'];
    const content: unknown[] =
      raw === undefined || raw === null
        ? []
        : typeof raw === 'string'
          ? [{ type: 'text', text: raw }]
          : array(raw, at);
    const canonical = content.flatMap((item, i) => resultBlock(item, [...at, i]));
    const isError = block['is_error'] === true;
    this.canonical.push({
      content: canonical,
      is_error: isError || undefined,
      tool_use_id: id,
      type: 'tool_result',
    });
    // Images and documents are stored as files of the call; the text keeps what has no part.
    const files: PartInput[] = [];
    const texts: string[] = [];
    canonical.forEach((item, i) => {
      const file = resultFile(item, id, [...at, i]);
      if (file) files.push(file);
      else texts.push(resultText(item));
    });
    const output = texts.join('\n\n');
    const result: ToolResultWrite = isError
      ? { callId: id, output: null, error: output === '' ? 'Tool error' : output }
      : { callId: id, output, error: null };
    this.results.push(files.length > 0 ? { ...result, files } : result);
  }
}

/** A block as sent back: what the client sent, without the cache breakpoint it moves every turn. */
function verbatim(block: Json, path: Path): Json {
  const { cache_control: _breakpoint, ...rest } = block;
  return storableJson(rest, path, KEPT_BLOCK_DEPTH) as Json;
}

/** A kept block sits at `metadata.anthropic.kept[i].block`: four levels below the stored metadata. */
const KEPT_BLOCK_DEPTH = 4;

/** A kept block as hashed: a top-level `null` field reads as absent (clients drop or keep them). */
function canonicalKept(block: Json): Json {
  return Object.fromEntries(Object.entries(block).filter(([, value]) => value !== null));
}

function resultBlock(item: unknown, path: Path): Json[] {
  const block = record(item, path);
  if (block['type'] === 'text') {
    const value = text(block['text'], [...path, 'text']);
    return value === '' ? [] : [{ text: value, type: 'text' }];
  }
  text(block['type'], [...path, 'type']);
  return [canonicalKept(verbatim(block, path))];
}

/** An image or document block of a tool result as a file part of its call, or null for any other block. */
function resultFile(block: Json, callId: string, path: Path): PartInput | null {
  const type = block['type'];
  if (type !== 'image' && type !== 'document') return null;
  const title = typeof block['title'] === 'string' ? block['title'] : undefined;
  const part = filePart(record(block['source'], [...path, 'source']), type, title, [...path, 'source']);
  return part === null ? null : ({ ...part, callId } as PartInput);
}

/** What the model reads of a tool result block in our text-only tool output. */
function resultText(block: Json): string {
  return block['type'] === 'text' ? (block['text'] as string) : `[${String(block['type'])} block]`;
}

/**
 * An image or document as a file part by URL: base64 as a `data:` URL, a plain-text document as
 * a `data:text/plain` URL, Files API ids as `anthropic-file:<id>`. A document made of content
 * blocks has no URL form (null: kept verbatim instead).
 */
function filePart(
  source: Json,
  type: 'image' | 'document',
  title: string | undefined,
  path: Path,
): PartInput | null {
  const filename = title ?? null;
  switch (source['type']) {
    case 'base64': {
      const mime = text(source['media_type'], [...path, 'media_type']);
      const url = `data:${mime};base64,${text(source['data'], [...path, 'data'])}`;
      if (dataUrlMime(url) === null)
        throw new DropInInputError([...path, 'media_type'], 'must be a media type');
      return { type: 'file', mime, filename, url };
    }
    case 'url': {
      const url = text(source['url'], [...path, 'url']);
      if (url === '') throw new DropInInputError([...path, 'url'], 'must not be empty');
      return { type: 'file', mime: type === 'image' ? 'image/*' : 'application/pdf', filename, url };
    }
    case 'text': {
      const data = text(source['data'], [...path, 'data']);
      return {
        type: 'file',
        mime: 'text/plain',
        filename,
        url: `data:text/plain;charset=utf-8,${encodeURIComponent(data)}`,
      };
    }
    case 'file':
      return {
        type: 'file',
        mime: type === 'image' ? 'image/*' : 'application/pdf',
        filename,
        url: `anthropic-file:${text(source['file_id'], [...path, 'file_id'])}`,
      };
    case 'content':
      return null;
    default:
      throw new DropInInputError([...path, 'type'], 'must be one of base64, url, text, file, content');
  }
}
