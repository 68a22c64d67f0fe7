/**
 * An agent loop on Compactor (the README's example; `agent-loop.test.ts` runs it against the
 * real API and the LLM stub, so it cannot rot): append the user's turn, read the context the
 * model should see with the recall tool, call the model, append its answer and its tool results
 * (recall calls executed by the client); when the provider says the prompt is too long, report
 * it, wait for the emergency compaction, and try again. 429/503 from Compactor are retried by the
 * client itself.
 */
import {
  RECALL_TOOL_NAME,
  usageFromOpenAI,
  type CompactorClient,
  type MessageRequest,
  type OpenAIMessage,
  type OpenAITool,
  type OpenAIToolCall,
  type OpenAIUsageLike,
  type UsageInput,
} from '@compactor/client';

/** An OpenAI-compatible Chat Completions endpoint. */
export interface ChatModel {
  /** `https://api.openai.com/v1`, a vLLM or LiteLLM URL, … */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Extra headers for every completion request. */
  headers?: Record<string, string>;
}

/** A provider's refusal, with what Compactor's overflow classifier reads. */
export class ProviderError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`the model answered ${status}: ${body.slice(0, 200)}`);
  }
}

/**
 * One completion: its text, the tools it calls, and the usage Compactor calibrates its estimate
 * with, in Compactor's terms (`input` leaves out the cached tokens: `usageFromOpenAI` maps it).
 */
export interface Reply {
  text: string;
  toolCalls: OpenAIToolCall[];
  usage: UsageInput;
}

/** Chat Completions messages and the tools Compactor offers in, a {@link Reply} out. */
export type Model = (messages: OpenAIMessage[], tools: OpenAITool[]) => Promise<Reply>;

/** One completion of an OpenAI-compatible endpoint; throws {@link ProviderError} on a refusal. */
export async function complete(
  llm: ChatModel,
  messages: OpenAIMessage[],
  tools: OpenAITool[],
): Promise<Reply> {
  const response = await fetch(`${llm.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${llm.apiKey}`, ...llm.headers },
    body: JSON.stringify({ model: llm.model, messages, tools, max_tokens: 256 }),
  });
  if (!response.ok) throw new ProviderError(response.status, await response.text());
  const body = (await response.json()) as {
    choices: Array<{ message: { content: string | null; tool_calls?: OpenAIToolCall[] } }>;
    usage?: OpenAIUsageLike;
  };
  const message = body.choices[0]?.message;
  return {
    text: message?.content ?? '',
    toolCalls: message?.tool_calls ?? [],
    // prompt_tokens counts the cached prefix too: the helper moves it to cacheRead, counted once.
    usage: usageFromOpenAI(body.usage),
  };
}

type ToolPart = Extract<MessageRequest['parts'][number], { type: 'tool' }>;

/**
 * Runs one tool call as a tool part of the assistant's turn: recall by the client (what it
 * finds, or why it found nothing, is the output); this agent has no other tool, so any other
 * call is an error the model reads.
 */
async function runTool(client: CompactorClient, sessionId: string, call: OpenAIToolCall): Promise<ToolPart> {
  let input: unknown;
  try {
    input = JSON.parse(call.function.arguments);
  } catch {
    input = call.function.arguments;
  }
  const part = { type: 'tool' as const, callId: call.id, tool: call.function.name, input };
  if (call.function.name !== RECALL_TOOL_NAME) {
    return { ...part, status: 'error', error: `no tool named ${call.function.name}` };
  }
  const message = await client.executeRecallToolCall(sessionId, call);
  return { ...part, status: 'completed', output: message.content };
}

/** Waits until a compaction is over (completed, failed or skipped). */
export async function compactionSettled(client: CompactorClient, compactionId: string): Promise<string> {
  for (;;) {
    const { status } = await client.getCompaction(compactionId);
    if (status === 'completed' || status === 'failed' || status === 'skipped') return status;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What a run did, for the caller (and the test) to see. */
export interface AgentRun {
  replies: string[];
  /** Compactions an overflow report started (or found running). */
  overflowCompactions: string[];
}

/**
 * Runs one session through the user's turns. Each turn: append it, read the context in OpenAI's
 * format with the recall tool, complete, append the answer with its tool results (and complete
 * again while the model calls tools, at most `maxSteps` times); on a provider error, report it
 * and, when it was an overflow, wait for the compaction and retry (at most `maxOverflowRetries`
 * times per turn). `model` replaces the call of `llm` (a test's scripted model, another SDK).
 */
export async function runAgent(options: {
  client: CompactorClient;
  llm: ChatModel;
  sessionId: string;
  userTurns: string[];
  model?: Model;
  maxOverflowRetries?: number;
  maxSteps?: number;
}): Promise<AgentRun> {
  const { client, llm, sessionId } = options;
  const model = options.model ?? ((messages, tools) => complete(llm, messages, tools));
  const run: AgentRun = { replies: [], overflowCompactions: [] };
  for (const text of options.userTurns) {
    await client.appendMessages(sessionId, [{ role: 'user', parts: [{ type: 'text', text }] }]);
    for (let step = 0, overflows = 0; ;) {
      const context = await client.getContext(sessionId, { format: 'openai', tools: 'recall' });
      let reply: Reply;
      try {
        reply = await model(context.messages, context.tools ?? []);
      } catch (error) {
        if (!(error instanceof ProviderError) || overflows >= (options.maxOverflowRetries ?? 2)) throw error;
        // Compactor's classifier knows every provider's wording; anything else is not ours to fix.
        const verdict = await client.reportOverflow(sessionId, { error: error.body, status: error.status });
        if (!verdict.overflow || !verdict.compaction) throw error;
        overflows += 1;
        run.overflowCompactions.push(verdict.compaction.id);
        await compactionSettled(client, verdict.compaction.id);
        continue;
      }
      const calls = reply.toolCalls.length > 0;
      const parts: MessageRequest['parts'] =
        reply.text !== '' || !calls ? [{ type: 'text', text: reply.text }] : [];
      for (const call of reply.toolCalls) parts.push(await runTool(client, sessionId, call));
      await client.appendMessages(sessionId, [
        { role: 'assistant', parts, finish: calls ? 'tool-calls' : 'stop', usage: reply.usage },
      ]);
      if (!calls) {
        run.replies.push(reply.text);
        break;
      }
      step += 1;
      if (step >= (options.maxSteps ?? 8)) throw new Error(`the model kept calling tools for ${step} steps`);
    }
  }
  return run;
}
