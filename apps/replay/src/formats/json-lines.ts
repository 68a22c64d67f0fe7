/** JSONL: one JSON value per non-blank line, each remembered with its line number for errors. */
import { TranscriptError } from '../transcript';

export interface JsonLine {
  /** 1-based, as an editor shows it. */
  line: number;
  value: unknown;
}

/** Parses every non-blank line; the first that is not JSON throws, naming its line. */
export function parseJsonLines(text: string, file: string): JsonLine[] {
  const lines: JsonLine[] = [];
  let start = 0;
  let number = 0;
  while (start <= text.length) {
    const end = text.indexOf('\n', start);
    const raw = text.slice(start, end === -1 ? text.length : end);
    number++;
    start = end === -1 ? text.length + 1 : end + 1;
    if (raw.trim() === '') continue;
    try {
      lines.push({ line: number, value: JSON.parse(raw) as unknown });
    } catch (error) {
      throw new TranscriptError(file, number, `not JSON (${(error as Error).message})`);
    }
  }
  return lines;
}
