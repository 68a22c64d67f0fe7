/**
 * Builds API messages out of a transcript read in order: user and system text, and assistant steps
 * (one model call each) whose tool calls get their results when these arrive later in the file.
 * Every format parser feeds one of these, so pairing and finishing follow one set of rules.
 */
import type { MessageInput, PartInput } from '@compactor/db';
import type { Usage } from '@compactor/core';
import { NO_RESULT } from './text';

type ToolPartInput = Extract<PartInput, { type: 'tool' }>;

/** A tool name as the API takes one: other characters become `_`, at most 64 (`tool` when empty). */
export function storableToolName(tool: string): string {
  const name = tool.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 64);
  return name === '' ? 'tool' : name;
}

/** A call id as the API takes one: whitespace and control characters become `_`, at most 200. */
export function storableCallId(callId: string): string {
  const id = [...callId.replace(/[\s\p{C}]/gu, '_')].slice(0, 200).join('');
  return id === '' ? 'call' : id;
}

export class MessageBuilder {
  private readonly messages: MessageInput[] = [];
  private readonly calls = new Map<string, ToolPartInput>();
  private step: MessageInput | null = null;
  /** Tool results with no call before them (a call in a file part that was cut off). */
  orphanResults = 0;

  /** A user or system message; empty text is left out. Ends the open assistant step. */
  text(role: 'user' | 'system', text: string, createdAt?: string): void {
    this.closeStep();
    if (text.trim() === '') return;
    this.messages.push({ role, parts: [{ type: 'text', text }], ...(createdAt ? { createdAt } : {}) });
  }

  /** The open assistant step, opened if there is none. */
  private openStep(createdAt?: string): MessageInput {
    if (this.step === null) {
      this.step = { role: 'assistant', parts: [], ...(createdAt ? { createdAt } : {}) };
      this.messages.push(this.step);
    }
    return this.step;
  }

  /** Whether an assistant step is open (its model call not yet ended). */
  get stepOpen(): boolean {
    return this.step !== null;
  }

  assistantText(text: string, createdAt?: string): void {
    if (text.trim() !== '') this.openStep(createdAt).parts.push({ type: 'text', text });
  }

  reasoning(text: string, createdAt?: string): void {
    if (text.trim() !== '') this.openStep(createdAt).parts.push({ type: 'reasoning', text });
  }

  /**
   * A tool call of the open step; its result comes with {@link result}. Its name and id are
   * stored as the API takes them (a transcript may hold what no provider would write).
   */
  call(callId: string, tool: string, input: Record<string, unknown>, createdAt?: string): void {
    const part: ToolPartInput = {
      type: 'tool',
      callId: storableCallId(callId),
      tool: storableToolName(tool),
      status: 'pending',
      input,
    };
    this.openStep(createdAt).parts.push(part);
    this.calls.set(callId, part);
  }

  /** The result of call `callId`; returns false (and counts it) when no such call came before. */
  result(callId: string, output: string, isError: boolean): boolean {
    const part = this.calls.get(callId);
    if (!part) {
      this.orphanResults++;
      return false;
    }
    this.calls.delete(callId);
    if (isError) {
      part.status = 'error';
      part.error = output;
    } else {
      part.status = 'completed';
      part.output = output;
    }
    return true;
  }

  /** Usage of the open step's model call (the last report wins: streamed entries repeat it). */
  usage(usage: Usage): void {
    if (this.step) this.step.usage = usage;
  }

  /** Marks the open step as cut off by the output limit. */
  truncated(): void {
    if (this.step) this.step.finish = 'length';
  }

  /** Ends the open step: the next assistant output is another model call. */
  closeStep(): void {
    this.step = null;
  }

  /**
   * The messages, with ids `m1`, `m2`, …: steps finish `tool-calls` when they called tools and
   * `stop` otherwise; a call still without result is an error (the API stores no pending call in
   * a transcript that is over), and steps with no content are left out.
   */
  finish(): MessageInput[] {
    this.closeStep();
    for (const part of this.calls.values()) {
      part.status = 'error';
      part.error = NO_RESULT;
    }
    this.calls.clear();
    const kept = this.messages.filter((m) => m.parts.length > 0);
    return kept.map((message, i) => {
      const finish =
        message.role !== 'assistant'
          ? undefined
          : (message.finish ?? (message.parts.some((p) => p.type === 'tool') ? 'tool-calls' : 'stop'));
      return { id: `m${i + 1}`, ...message, ...(finish ? { finish } : {}) };
    });
  }
}
