import type { Message, Part } from '@compactor/core';
import { toolCallArguments } from '@compactor/core';

/**
 * Shrinking one message that is larger than the summarizer's whole window on its own (a pasted
 * log, a giant tool output). Tool outputs are already cut to the policy's bound by the transcript;
 * what is left is cut in the middle, keeping the start and the end, where the request and the
 * conclusion usually are (Letta cuts the middle of the transcript for the same reason).
 */

export function cutMiddle(text: string, keepChars: number): string {
  if (text.length <= keepChars) return text;
  const keep = Math.max(0, keepChars);
  const head = Math.ceil(keep * 0.6);
  const tail = keep - head;
  const removed = text.length - keep;
  return `${text.slice(0, head)}\n[... ${removed} characters cut to fit the summarizer's window ...]\n${text.slice(text.length - tail)}`;
}

function shrinkPart(part: Part, ratio: number, toolResultMaxChars: number, toolArgsMaxChars: number): Part {
  const keep = (length: number): number => Math.floor(length * ratio);
  switch (part.type) {
    case 'text':
    case 'reasoning':
      return { ...part, text: cutMiddle(part.text, keep(part.text.length)) };
    case 'tool': {
      // The transcript's own rendering of the arguments (core), so the cut matches what is shown.
      const args = toolCallArguments(part.input, { format: 'display' });
      const argsKeep = keep(Math.min(args.length, toolArgsMaxChars));
      const bounded = (text: string | null, bound: number): string | null =>
        text === null ? null : cutMiddle(text, keep(Math.min(text.length, bound)));
      return {
        ...part,
        // The transcript shows a string input as is; an object would be re-serialised whole.
        input: args.length > argsKeep ? cutMiddle(args, argsKeep) : part.input,
        output: bounded(part.output, toolResultMaxChars),
        error: bounded(part.error, toolResultMaxChars),
      };
    }
    case 'file':
    case 'compaction':
      return part;
  }
}

/**
 * `message` with every text, tool input, output and error cut to `ratio` (0–1) of what the
 * transcript would show. The stored message is untouched: this copy only feeds the summarizer.
 */
export function shrinkMessage(
  message: Message,
  ratio: number,
  bounds: { toolResultMaxChars: number; toolArgsMaxChars: number },
): Message {
  const clamped = Math.min(1, Math.max(0, ratio));
  const parts = message.parts.map((part) =>
    shrinkPart(part, clamped, bounds.toolResultMaxChars, bounds.toolArgsMaxChars),
  );
  const error = message.error
    ? {
        ...message.error,
        message: cutMiddle(message.error.message, Math.floor(message.error.message.length * clamped)),
      }
    : null;
  return { ...message, parts, error };
}
