/**
 * The model's `recall` calls, answered by Compactor: the step that made them is sent again with
 * the calls and their answers appended, up to {@link MAX_RECALL_ROUNDS} times. Neither the calls
 * nor the answers are stored (the client never saw them, so its next request cannot echo them);
 * the texts are the ones the clients' own recall helpers give the model.
 */
import {
  INVALID_RECALL_ARGUMENTS,
  recallAnswerText,
  recallQueryOf,
  type RecallRequest,
} from '@compactor/client';
import { RECALL_TOOL, RECALL_TOOL_NAME } from '@compactor/contract';
import { CallNotFound, CallOutputPurged, recall, type SessionTarget } from '@compactor/sessions';
import type { Db } from '@compactor/db';
import type {
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';

/** Steps asked again after answering recall calls, at most; the last one may call no tool. */
export const MAX_RECALL_ROUNDS = 4;

export const isRecallTool = (name: string) => name === RECALL_TOOL_NAME;

/**
 * The tools sent upstream: the client's, plus recall when the session offers it and the client
 * has no tool of that name itself (then the calls are the client's to answer).
 */
export function upstreamTools(
  clientTools: ChatCompletionTool[] | undefined,
  offerRecall: boolean,
): { tools: ChatCompletionTool[] | undefined; recallOffered: boolean } {
  const clientHasRecall = (clientTools ?? []).some(
    (tool) => tool.type === 'function' && isRecallTool(tool.function.name),
  );
  if (!offerRecall || clientHasRecall) return { tools: clientTools, recallOffered: false };
  return { tools: [...(clientTools ?? []), RECALL_TOOL as ChatCompletionTool], recallOffered: true };
}

/**
 * The messages that continue the conversation after a step that called recall: the step's
 * assistant message with only its recall calls (the other calls it made are dropped: it is asked
 * again, and will make them again if it still wants to), then one tool message per call.
 */
export async function recallExchange(
  db: Db,
  session: SessionTarget,
  content: string | null,
  calls: ChatCompletionMessageFunctionToolCall[],
): Promise<ChatCompletionMessageParam[]> {
  const answers = await Promise.all(
    calls.map(async (call): Promise<ChatCompletionMessageParam> => ({
      role: 'tool',
      tool_call_id: call.id,
      content: await answerRecallCall(db, session, call.function.arguments),
    })),
  );
  return [{ role: 'assistant', content, tool_calls: calls }, ...answers];
}

/** One recall call answered: the text the model gets back (the clients' own wording). */
export async function answerRecallCall(
  db: Db,
  session: SessionTarget,
  argumentsJson: string,
): Promise<string> {
  const query = recallQueryOf(argumentsJson);
  if (query === null) return INVALID_RECALL_ARGUMENTS;
  try {
    const answer = await recall(db, session, recallQuery(query));
    return recallAnswerText(answer);
  } catch (error) {
    if (error instanceof CallNotFound && query.callId !== undefined)
      return `No tool call "${query.callId}" is stored in this session: use the call id a cleared output's marker names.`;
    if (error instanceof CallOutputPurged && query.callId !== undefined)
      return `The output of tool call "${query.callId}" is no longer stored: retention has removed it.`;
    throw error;
  }
}

/** The recall route's query for the tool's arguments: a call by id, a ledger section, or words. */
function recallQuery(query: RecallRequest): Parameters<typeof recall>[2] {
  if ('callId' in query) return { callId: query.callId };
  if ('kind' in query) return { kind: query.kind };
  return { q: query.q, ...(query.limit !== undefined ? { limit: query.limit } : {}) };
}
