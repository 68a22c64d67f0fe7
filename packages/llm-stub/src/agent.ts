import { createHash } from 'node:crypto';
import { prunedOutputMarker } from '@compactor/core';
import type { StubMessage, StubRequest, StubToolCallPart } from './conversation';

/**
 * Agent mode: a request that offers tools is answered like a coding agent model would, derived
 * from the request alone so a test can run a long tool-using loop and predict every step.
 *
 * - last message a user text: a call to the first offered tool that is not `recall`, with
 *   `{"path":"file-<turn>-<step>.ts"}` (turn: user texts so far; step: 1 for the first call of
 *   the turn) and a short text before it;
 * - last message(s) tool results: another call while fewer than `steps` calls were made since
 *   the user's text, else a text quoting the checksum ({@link stubChecksum}) of each result;
 * - recall: with `recall` offered, a cleared-output marker in the prompt and the word "recall"
 *   in the last user text, a call `recall({"callId": …})` for the newest marker; after its
 *   result, a text quoting the checksum of the recalled output.
 */

export const RECALL_TOOL = 'recall';

/** What an agent-mode answer says: text, and at most one tool call. */
export interface AgentReply {
  text: string | null;
  toolCall: StubToolCallPart | null;
}

/** The checksum the stub quotes of a tool result: the first 12 hex digits of its SHA-256. */
export function stubChecksum(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12);
}

const [MARKER_HEAD = '', MARKER_TAIL = ''] = prunedOutputMarker('\u0000').split('\u0000');
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const MARKER = new RegExp(`${escapeRegExp(MARKER_HEAD)}(\\S+?)${escapeRegExp(MARKER_TAIL)}`, 'g');

/** The call id of the newest cleared-output marker in the prompt, or `null`. */
export function newestClearedCallId(messages: readonly StubMessage[]): string | null {
  for (let at = messages.length - 1; at >= 0; at -= 1) {
    const message = messages[at];
    if (message === undefined) continue;
    const texts = [message.text, ...message.toolResults.map((result) => result.output)];
    for (let t = texts.length - 1; t >= 0; t -= 1) {
      const ids = [...(texts[t] ?? '').matchAll(MARKER)].map((match) => match[1]);
      const newest = ids.at(-1);
      if (newest !== undefined) return newest;
    }
  }
  return null;
}

/** A user message that is the user's own words, not only tool results. */
const isUserText = (message: StubMessage): boolean =>
  message.role === 'user' && message.toolResults.length === 0 && message.text.trim() !== '';

/**
 * The agent-mode answer, or `null` when agent mode does not apply (no tools offered, only
 * `recall` offered to a non-recall turn, or the last message is neither a user text nor results).
 */
export function agentReply(request: StubRequest, steps: number, idPrefix: string): AgentReply | null {
  if (request.toolNames.length === 0) return null;
  const messages = request.messages;
  const lastUserAt = messages.findLastIndex(isUserText);
  const turn = messages.filter(isUserText).length;
  const results = trailingResults(messages);
  const callId = (step: number): string =>
    `${idPrefix}${createHash('sha256').update(JSON.stringify(messages)).update(String(step)).digest('hex').slice(0, 24)}`;
  const workTool = request.toolNames.find((name) => name !== RECALL_TOOL) ?? null;

  if (results.length === 0) {
    const last = messages.at(-1);
    if (last === undefined || !isUserText(last)) return null;
    const clearedId = request.toolNames.includes(RECALL_TOOL) ? newestClearedCallId(messages) : null;
    if (clearedId !== null && /\brecall\b/i.test(last.text)) {
      return {
        text: `Recalling ${clearedId}.`,
        toolCall: { id: callId(0), name: RECALL_TOOL, arguments: JSON.stringify({ callId: clearedId }) },
      };
    }
    return workTool === null ? null : workCall(workTool, turn, 1, callId(1));
  }

  const calls = new Map(messages.flatMap((message) => message.toolCalls.map((call) => [call.id, call])));
  const recalled = results.filter((result) => calls.get(result.callId)?.name === RECALL_TOOL);
  if (recalled.length > 0) {
    const quotes = recalled.map(
      (result) => `${recalledId(calls.get(result.callId))} ${stubChecksum(result.output)}`,
    );
    return { text: `Recalled output checksum: ${quotes.join(', ')}.`, toolCall: null };
  }
  const callsThisTurn = messages
    .slice(lastUserAt + 1)
    .flatMap((message) => message.toolCalls)
    .filter((call) => call.name !== RECALL_TOOL).length;
  if (workTool !== null && callsThisTurn < steps) {
    return workCall(workTool, turn, callsThisTurn + 1, callId(callsThisTurn + 1));
  }
  const quotes = results.map((result) => `${result.callId} ${stubChecksum(result.output)}`);
  return { text: `Tool result checksum: ${quotes.join(', ')}.`, toolCall: null };
}

function workCall(tool: string, turn: number, step: number, id: string): AgentReply {
  const path = `file-${turn}-${step}.ts`;
  return {
    text: `Looking at ${path}.`,
    toolCall: { id, name: tool, arguments: JSON.stringify({ path }) },
  };
}

/** The tool results the conversation ends with (a run of Chat `tool` messages, or one user message). */
function trailingResults(messages: readonly StubMessage[]): StubMessage['toolResults'] {
  const results: StubMessage['toolResults'] = [];
  for (let at = messages.length - 1; at >= 0; at -= 1) {
    const message = messages[at];
    if (message === undefined || message.toolResults.length === 0) break;
    results.unshift(...message.toolResults);
    if (message.role !== 'tool') break;
  }
  return results;
}

/** The call id a recall call asked for, as it wrote it (the recall call's own id when unreadable). */
function recalledId(call: StubToolCallPart | undefined): string {
  try {
    const args = JSON.parse(call?.arguments ?? '') as { callId?: unknown };
    if (typeof args.callId === 'string') return args.callId;
  } catch {
    // An argument text that is not JSON: fall through.
  }
  return call?.id ?? 'unknown';
}
