/**
 * An agent loop on Compactor (the README's example; `agent-loop.test.ts` runs it against the
 * real API and the LLM stub, so it cannot rot): append the user's turn, read the context the
 * model should see, call the model; when the provider says the prompt is too long, report it,
 * wait for the emergency compaction, and try again. 429/503 from Compactor are retried by the
 * client itself.
 */
import type { CompactorClient, OpenAIMessage } from '@compactor/client';

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

/** One completion: the reply's text and the usage Compactor calibrates its estimate with. */
export async function complete(
  llm: ChatModel,
  messages: OpenAIMessage[],
): Promise<{ text: string; usage: { input: number; output: number } }> {
  const response = await fetch(`${llm.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${llm.apiKey}`, ...llm.headers },
    body: JSON.stringify({ model: llm.model, messages, max_tokens: 256 }),
  });
  if (!response.ok) throw new ProviderError(response.status, await response.text());
  const body = (await response.json()) as {
    choices: Array<{ message: { content: string | null } }>;
    usage: { prompt_tokens: number; completion_tokens: number };
  };
  return {
    text: body.choices[0]?.message.content ?? '',
    usage: { input: body.usage.prompt_tokens, output: body.usage.completion_tokens },
  };
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
 * format, complete; on a provider error, report it and, when it was an overflow, wait for the
 * compaction and retry (at most `maxOverflowRetries` times per turn).
 */
export async function runAgent(options: {
  client: CompactorClient;
  llm: ChatModel;
  sessionId: string;
  userTurns: string[];
  maxOverflowRetries?: number;
}): Promise<AgentRun> {
  const { client, llm, sessionId } = options;
  const run: AgentRun = { replies: [], overflowCompactions: [] };
  for (const text of options.userTurns) {
    await client.appendMessages(sessionId, [{ role: 'user', parts: [{ type: 'text', text }] }]);
    for (let attempt = 0; ; attempt += 1) {
      const context = await client.getContext(sessionId, { format: 'openai' });
      try {
        const reply = await complete(llm, context.messages);
        await client.appendMessages(sessionId, [
          {
            role: 'assistant',
            parts: [{ type: 'text', text: reply.text }],
            finish: 'stop',
            usage: reply.usage,
          },
        ]);
        run.replies.push(reply.text);
        break;
      } catch (error) {
        if (!(error instanceof ProviderError) || attempt >= (options.maxOverflowRetries ?? 2)) throw error;
        // Compactor's classifier knows every provider's wording; anything else is not ours to fix.
        const verdict = await client.reportOverflow(sessionId, { error: error.body, status: error.status });
        if (!verdict.overflow || !verdict.compaction) throw error;
        run.overflowCompactions.push(verdict.compaction.id);
        await compactionSettled(client, verdict.compaction.id);
      }
    }
  }
  return run;
}
