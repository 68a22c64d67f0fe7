/**
 * Chat Completions `messages` → conversation elements. The canonical form keeps what the model
 * reads (text, tool call ids, names, arguments as text, tool_call_id, image and file references)
 * and drops what clients change between turns without changing meaning: `null` vs absent,
 * `refusal`, `annotations`, `audio`, the stream's `index`, string content vs one text part, and
 * the `reasoning_content` some providers add (clients differ on sending it back).
 */
import { textProblem, type PartInput } from '@compactor/contract';
import { DropInInputError } from './input-error';
import { chainElements, type ConversationElement, type ElementDraft } from './elements';
import {
  array,
  boundedParts,
  callId,
  dataUrlMime,
  optionalText,
  record,
  text,
  toolName,
  type Json,
  type Path,
} from './read-input';

/** One Chat Completions content part as hashed. */
type CanonicalPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; url: string; detail: string | undefined }
  | { type: 'input_audio'; format: string; data: string }
  | {
      type: 'file';
      file_id: string | undefined;
      filename: string | undefined;
      file_data: string | undefined;
    };

/** The elements of a Chat Completions request's `messages`; throws {@link DropInInputError} on bad input. */
export function openAIChatElements(messages: unknown): ConversationElement[] {
  const list = array(messages, ['messages']);
  return chainElements(list.map((message, index) => openAIMessageDraft(message, ['messages', index], index)));
}

/**
 * One Chat Completions message (request or response shape) as an element draft. `index` names
 * a legacy `function_call`, which carries no id of its own.
 */
export function openAIMessageDraft(value: unknown, path: Path, index: number): ElementDraft {
  const message = record(value, path);
  const role = message['role'];
  const name = optionalText(message['name'], [...path, 'name']);
  switch (role) {
    case 'system':
    case 'developer': {
      const content = textParts(message['content'], [...path, 'content']);
      return {
        role: 'system',
        canonical: { content, name, role },
        message: { role: 'system', parts: boundedParts(content.map(textPart), [...path, 'content']) },
        toolResults: [],
      };
    }
    case 'user': {
      const content = userParts(message['content'], [...path, 'content']);
      return {
        role: 'user',
        canonical: { content, name, role },
        message: { role: 'user', parts: boundedParts(content.map(userPart), [...path, 'content']) },
        toolResults: [],
      };
    }
    case 'assistant':
      return assistantDraft(message, path, index, name);
    case 'tool': {
      const id = callId(message['tool_call_id'], [...path, 'tool_call_id']);
      const content = textParts(message['content'], [...path, 'content']);
      return {
        role: 'tool',
        canonical: { content, role, tool_call_id: id },
        message: null,
        toolResults: [{ callId: id, output: content.map((part) => part.text).join('\n\n'), error: null }],
      };
    }
    case 'function':
      throw new DropInInputError(
        [...path, 'role'],
        'the legacy "function" role is not supported: send tool results as role "tool" with their tool_call_id',
      );
    default:
      throw new DropInInputError(
        [...path, 'role'],
        'must be one of system, developer, user, assistant, tool',
      );
  }
}

function assistantDraft(message: Json, path: Path, index: number, name: string | undefined): ElementDraft {
  const content = textParts(message['content'], [...path, 'content'], ['refusal']);
  const calls = toolCalls(message, path, index);
  const reasoning = providerReasoning(message);
  const parts: PartInput[] = [];
  if (reasoning !== null) parts.push({ type: 'reasoning', text: reasoning });
  parts.push(...content.map(textPart));
  for (const call of calls) {
    parts.push({
      type: 'tool',
      callId: call.id,
      tool: call.name,
      status: 'pending',
      // The arguments text as the model wrote it (renderers pass JSON object text through
      // unchanged); none at all, as some providers send for a tool without parameters, is `{}`.
      input: call.arguments === '' ? {} : (call.arguments ?? call.input),
      output: null,
      error: null,
    });
  }
  return {
    role: 'assistant',
    // Keys in sorted order at every depth, as the chain hash reads them (see canonicalJson).
    canonical: {
      content,
      // The derived id is Compactor's, not the client's: the echo carries none.
      function_call: calls
        .filter((call) => call.legacy)
        .map((call) => ({ arguments: call.arguments, name: call.name }))[0],
      name,
      role: 'assistant',
      tool_calls: calls.filter((call) => !call.legacy).map(({ legacy: _legacy, ...call }) => call),
    },
    message: { role: 'assistant', parts: boundedParts(parts, [...path, 'content']) },
    toolResults: [],
  };
}

/**
 * The reasoning text some providers add (`reasoning_content`, OpenRouter's `reasoning`). Not part
 * of the Chat Completions contract, so a shape we do not know, or text the store cannot hold, is
 * left out rather than refused.
 */
function providerReasoning(message: Json): string | null {
  for (const key of ['reasoning_content', 'reasoning']) {
    const value = message[key];
    if (typeof value === 'string' && value !== '' && textProblem(value) === null) return value;
  }
  return null;
}

interface CanonicalCall {
  id: string;
  type: 'function' | 'custom';
  name: string;
  arguments?: string;
  input?: string;
  /** A legacy `function_call`, whose id is derived here. */
  legacy?: true;
}

function toolCalls(message: Json, path: Path, index: number): CanonicalCall[] {
  const calls: CanonicalCall[] = [];
  const raw = message['tool_calls'];
  if (raw !== undefined && raw !== null) {
    array(raw, [...path, 'tool_calls']).forEach((item, i) => {
      const at = [...path, 'tool_calls', i];
      const call = record(item, at);
      const id = callId(call['id'], [...at, 'id']);
      if (call['type'] === 'custom') {
        const custom = record(call['custom'], [...at, 'custom']);
        const name = toolName(custom['name'], [...at, 'custom', 'name']);
        calls.push({
          id,
          input: text(custom['input'] ?? '', [...at, 'custom', 'input']),
          name,
          type: 'custom',
        });
        return;
      }
      if (call['type'] !== undefined && call['type'] !== 'function') {
        throw new DropInInputError([...at, 'type'], 'must be "function" or "custom"');
      }
      const fn = record(call['function'], [...at, 'function']);
      const name = toolName(fn['name'], [...at, 'function', 'name']);
      calls.push({
        arguments: text(fn['arguments'] ?? '', [...at, 'function', 'arguments']),
        id,
        name,
        type: 'function',
      });
    });
  }
  const legacy = message['function_call'];
  if (legacy !== undefined && legacy !== null) {
    const at = [...path, 'function_call'];
    const fn = record(legacy, at);
    calls.push({
      arguments: text(fn['arguments'] ?? '', [...at, 'arguments']),
      // No id on the wire: one derived from the message's place, unique in the conversation.
      id: `function_call_${index}`,
      name: toolName(fn['name'], [...at, 'name']),
      type: 'function',
      legacy: true,
    });
  }
  const seen = new Set<string>();
  calls.forEach((call, i) => {
    if (seen.has(call.id))
      throw new DropInInputError([...path, 'tool_calls', i, 'id'], `duplicate tool call id ${call.id}`);
    seen.add(call.id);
  });
  return calls;
}

/** String or text parts (plus `ignored` part types, e.g. an assistant's `refusal`), empty texts left out. */
function textParts(
  content: unknown,
  path: Path,
  ignored: readonly string[] = [],
): { type: 'text'; text: string }[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ text: text(content, path), type: 'text' }];
  const out: { type: 'text'; text: string }[] = [];
  array(content, path).forEach((item, i) => {
    const part = record(item, [...path, i]);
    if (typeof part['type'] === 'string' && ignored.includes(part['type'])) return;
    if (part['type'] !== 'text') throw new DropInInputError([...path, i, 'type'], 'must be "text" here');
    const value = text(part['text'], [...path, i, 'text']);
    if (value !== '') out.push({ text: value, type: 'text' });
  });
  return out;
}

function userParts(content: unknown, path: Path): CanonicalPart[] {
  if (content === undefined || content === null || typeof content === 'string')
    return textParts(content, path);
  return array(content, path).flatMap((item, i): CanonicalPart[] => {
    const at = [...path, i];
    const part = record(item, at);
    switch (part['type']) {
      case 'text': {
        const value = text(part['text'], [...at, 'text']);
        return value === '' ? [] : [{ text: value, type: 'text' }];
      }
      case 'image_url': {
        const image = record(part['image_url'], [...at, 'image_url']);
        const url = text(image['url'], [...at, 'image_url', 'url']);
        if (url === '') throw new DropInInputError([...at, 'image_url', 'url'], 'must not be empty');
        return [
          { detail: optionalText(image['detail'], [...at, 'image_url', 'detail']), type: 'image_url', url },
        ];
      }
      case 'input_audio': {
        const audio = record(part['input_audio'], [...at, 'input_audio']);
        const format = text(audio['format'], [...at, 'input_audio', 'format']);
        if (!/^[a-z0-9]{1,16}$/.test(format))
          throw new DropInInputError(
            [...at, 'input_audio', 'format'],
            'must be an audio format such as "wav"',
          );
        return [{ data: text(audio['data'], [...at, 'input_audio', 'data']), format, type: 'input_audio' }];
      }
      case 'file': {
        const file = record(part['file'], [...at, 'file']);
        const canonical = {
          file_data: optionalText(file['file_data'], [...at, 'file', 'file_data']),
          file_id: optionalText(file['file_id'], [...at, 'file', 'file_id']),
          filename: optionalText(file['filename'], [...at, 'file', 'filename']),
          type: 'file' as const,
        };
        if (!canonical.file_id && !canonical.file_data) {
          throw new DropInInputError([...at, 'file'], 'needs file_id or file_data');
        }
        return [canonical];
      }
      default:
        throw new DropInInputError([...at, 'type'], 'must be one of text, image_url, input_audio, file');
    }
  });
}

function textPart(part: { text: string }): PartInput {
  return { type: 'text', text: part.text };
}

/** A user content part as stored: text, or a file part by URL (images stay images for the renderer). */
function userPart(part: CanonicalPart): PartInput {
  switch (part.type) {
    case 'text':
      return textPart(part);
    case 'image_url':
      return { type: 'file', mime: dataUrlMime(part.url) ?? 'image/*', filename: null, url: part.url };
    case 'input_audio':
      return {
        type: 'file',
        mime: `audio/${part.format}`,
        filename: null,
        url: `data:audio/${part.format};base64,${part.data}`,
      };
    case 'file': {
      const mime = fileMime(part);
      const url =
        part.file_data === undefined
          ? `openai-file:${part.file_id}`
          : dataUrlMime(part.file_data) === null
            ? `data:${mime};base64,${part.file_data}`
            : part.file_data;
      return { type: 'file', mime, filename: part.filename ?? null, url };
    }
  }
}

/** A file's media type: its data URL's, else a PDF's by name (the files Chat Completions reads), else unknown. */
function fileMime(part: { file_data: string | undefined; filename: string | undefined }): string {
  const fromUrl = part.file_data === undefined ? null : dataUrlMime(part.file_data);
  if (fromUrl !== null) return fromUrl;
  return part.filename?.toLowerCase().endsWith('.pdf') ? 'application/pdf' : 'application/octet-stream';
}
