/**
 * A streamed Chat Completion put back together: the chunks' deltas accumulated into the
 * `chat.completion` a non-streaming request would have answered, which is what is stored (and
 * replayed) for a streamed answer.
 */
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';

interface ChoiceSoFar {
  content: string | null;
  refusal: string | null;
  /** Reasoning text some OpenAI-compatible servers stream (`reasoning_content` or `reasoning`). */
  reasoning: string | null;
  toolCalls: Map<number, ChatCompletionMessageFunctionToolCall>;
  finishReason: ChatCompletion.Choice['finish_reason'] | null;
}

type ReasoningDelta = { reasoning_content?: string | null; reasoning?: string | null };

export class ChatChunkAccumulator {
  private id = '';
  private model = '';
  private created = 0;
  private systemFingerprint: string | undefined;
  private readonly choices = new Map<number, ChoiceSoFar>();
  usage: CompletionUsage | null = null;

  add(chunk: ChatCompletionChunk): void {
    this.id ||= chunk.id;
    this.model ||= chunk.model;
    this.created ||= chunk.created;
    this.systemFingerprint ??= chunk.system_fingerprint;
    if (chunk.usage) this.usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      const soFar = this.choice(choice.index);
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string') soFar.content = (soFar.content ?? '') + delta.content;
      if (typeof delta.refusal === 'string') soFar.refusal = (soFar.refusal ?? '') + delta.refusal;
      const reasoning = (delta as ReasoningDelta).reasoning_content ?? (delta as ReasoningDelta).reasoning;
      if (typeof reasoning === 'string') soFar.reasoning = (soFar.reasoning ?? '') + reasoning;
      for (const call of delta.tool_calls ?? []) {
        const known = soFar.toolCalls.get(call.index) ?? {
          id: '',
          type: 'function' as const,
          function: { name: '', arguments: '' },
        };
        if (call.id) known.id = call.id;
        if (call.function?.name) known.function.name += call.function.name;
        if (call.function?.arguments) known.function.arguments += call.function.arguments;
        soFar.toolCalls.set(call.index, known);
      }
      if (choice.finish_reason) soFar.finishReason = choice.finish_reason;
    }
  }

  /** The tool calls of the first choice so far, in their stream order. */
  toolCalls(): ChatCompletionMessageFunctionToolCall[] {
    return [...(this.choices.get(0)?.toolCalls.entries() ?? [])]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => call);
  }

  /** The completion the chunks add up to. */
  completion(): ChatCompletion {
    const choices = [...this.choices.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, soFar]): ChatCompletion.Choice => {
        const toolCalls = [...soFar.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
        return {
          index,
          finish_reason: soFar.finishReason ?? 'stop',
          logprobs: null,
          message: {
            role: 'assistant',
            content: soFar.content,
            refusal: soFar.refusal,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
            ...(soFar.reasoning !== null ? { reasoning_content: soFar.reasoning } : {}),
          },
        };
      });
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      choices,
      ...(this.systemFingerprint !== undefined ? { system_fingerprint: this.systemFingerprint } : {}),
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }

  private choice(index: number): ChoiceSoFar {
    let soFar = this.choices.get(index);
    if (!soFar) {
      soFar = { content: null, refusal: null, reasoning: null, toolCalls: new Map(), finishReason: null };
      this.choices.set(index, soFar);
    }
    return soFar;
  }
}
