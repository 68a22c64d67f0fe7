/**
 * The model's `recall` calls, answered by Compactor: the step that made them is sent again with
 * the calls and their answers appended, up to {@link MAX_RECALL_ROUNDS} times. Neither the calls
 * nor the answers are stored (the client never saw them, so its next request cannot echo them);
 * the texts are the ones the clients' own recall helpers give the model. An image recalled by its
 * media id comes back as an image, after those texts: a Chat Completions tool message holds text
 * only, so there it follows in a user message.
 */
import {
  INVALID_RECALL_ARGUMENTS,
  mediaNotFoundText,
  recallAnswerText,
  recallQueryOf,
  type RecallRequest,
} from '@compactor/client';
import { RECALL_TOOL, RECALL_TOOL_NAME } from '@compactor/contract';
import {
  CallNotFound,
  CallOutputPurged,
  MediaNotFound,
  recall,
  type SessionTarget,
} from '@compactor/sessions';
import type { Db } from '@compactor/db';
import type {
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionContentPart,
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
  const answers = await Promise.all(calls.map((call) => answerRecall(db, session, call.function.arguments)));
  const images: ChatCompletionContentPart[] = answers.flatMap(({ text, image }) =>
    image === null
      ? []
      : [
          { type: 'text', text },
          { type: 'image_url', image_url: { url: image.url } },
        ],
  );
  return [
    { role: 'assistant', content, tool_calls: calls },
    ...answers.map(({ text }, i): ChatCompletionMessageParam => ({
      role: 'tool',
      tool_call_id: calls[i]!.id,
      content: text,
    })),
    ...(images.length > 0 ? [{ role: 'user' as const, content: images }] : []),
  ];
}

/** An image recalled by its media id, as a `data:` URL of a type every provider takes. */
export interface RecalledImage {
  mime: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
  url: string;
  /** The bytes in base64 (the URL's data). */
  data: string;
}

const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** One recall call answered: the text the model gets back (the clients' own wording). */
export async function answerRecallCall(
  db: Db,
  session: SessionTarget,
  argumentsJson: string,
): Promise<string> {
  return (await answerRecall(db, session, argumentsJson)).text;
}

/**
 * {@link answerRecallCall}, and the image when the call recalled one by its media id (a document
 * recalled so is described in the text only).
 */
export async function answerRecall(
  db: Db,
  session: SessionTarget,
  argumentsJson: string,
): Promise<{ text: string; image: RecalledImage | null }> {
  const query = recallQueryOf(argumentsJson);
  if (query === null) return { text: INVALID_RECALL_ARGUMENTS, image: null };
  try {
    const answer = await recall(db, session, recallQuery(query));
    const url = answer.kind === 'media' ? answer.part.url : '';
    const mime = answer.kind === 'media' ? answer.part.mime : '';
    const base64 = `data:${mime};base64,`;
    const image =
      IMAGE_TYPES.has(mime) && url.startsWith(base64)
        ? { mime: mime as RecalledImage['mime'], url, data: url.slice(base64.length) }
        : null;
    return { text: recallAnswerText(answer), image };
  } catch (error) {
    return { text: refusalText(query, error), image: null };
  }
}

/** What the model is told of a recall the route refused for its arguments; anything else is thrown. */
function refusalText(query: RecallRequest, error: unknown): string {
  if (error instanceof CallNotFound && query.callId !== undefined)
    return `No tool call "${query.callId}" is stored in this session: use the call id a cleared output's marker names.`;
  if (error instanceof CallOutputPurged && query.callId !== undefined)
    return `The output of tool call "${query.callId}" is no longer stored: retention has removed it.`;
  if (error instanceof MediaNotFound && query.mediaId !== undefined) return mediaNotFoundText(query.mediaId);
  throw error;
}

/** The recall route's query for the tool's arguments: a call or an image by id, a ledger section, or words. */
function recallQuery(query: RecallRequest): Parameters<typeof recall>[2] {
  if ('callId' in query) return { callId: query.callId };
  if (query.mediaId !== undefined) return { mediaId: query.mediaId };
  if ('kind' in query) return { kind: query.kind };
  return { q: query.q, ...(query.limit !== undefined ? { limit: query.limit } : {}) };
}
