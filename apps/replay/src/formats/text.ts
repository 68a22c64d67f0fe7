/** Small helpers the format parsers share: text out of content blocks, timestamps, tool inputs. */
import { isObject } from '../transcript';

/**
 * The text of a content value: a string, or an array of blocks whose text is in `text` (Anthropic
 * `text`, OpenAI `text` / `input_text` / `output_text`); images and other blocks become a marker.
 */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => {
      if (typeof block === 'string') return block;
      if (!isObject(block)) return '';
      if (typeof block.text === 'string') return block.text;
      if (typeof block.type === 'string' && /image/.test(block.type)) return '[image]';
      return '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

/** An ISO timestamp the API accepts (with an offset), or `undefined`. */
export function timestamp(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(value) ? value : undefined;
}

/** Tool arguments as an object: JSON text is parsed; anything else is kept under `arguments`. */
export function toolInput(value: unknown): Record<string, unknown> {
  if (isObject(value)) return value;
  if (typeof value === 'string') {
    try {
      const parsed = JSON.parse(value) as unknown;
      if (isObject(parsed)) return parsed;
    } catch {
      // Not JSON (a truncated or free-form argument string): kept as text below.
    }
    return { arguments: value };
  }
  return value === undefined || value === null ? {} : { arguments: value };
}

/** Non-negative integer counts only (the API refuses anything else). */
export function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** A tool call that never got its result in the transcript (an interrupted session). */
export const NO_RESULT = 'no result in the transcript';
