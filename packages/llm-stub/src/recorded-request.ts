import type { StubMessage, StubProtocol } from './conversation';
import type { StubFaults } from './faults';

/** What the stub saw of one model request; tests assert on these instead of timing. */
export interface RecordedRequest {
  index: number;
  /** `openai` (`/v1/chat/completions`) or `anthropic` (`/v1/messages`). */
  protocol: StubProtocol;
  model: string;
  stream: boolean;
  maxTokens: number | null;
  /** The stub's estimate, the one its context window and its usage use. */
  promptTokens: number;
  /** System prompt first; text, tool calls and tool results (`toolPairing` checks their pairing). */
  messages: StubMessage[];
  /** Names of the offered tools. */
  toolNames: string[];
  headers: Record<string, string | string[] | undefined>;
  faults: StubFaults;
  /** HTTP status answered, or `null` while in flight or when the connection was dropped. */
  status: number | null;
  /** The client went away before the answer was complete (e.g. its AbortSignal fired). */
  clientClosed: boolean;
}
