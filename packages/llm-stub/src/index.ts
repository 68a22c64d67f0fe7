// Public surface of @compactor/llm-stub: start the server in-process (tests, demo, benchmarks);
// `stubFaultConfigSchema` also reads the fault settings of a stub process (apps/llm-stub).
export { startLlmStub } from './server';
export type { LlmStub, LlmStubEvents, LlmStubOptions, LlmStubStats, RecordedRequest } from './server';
export {
  FAULT_HEADERS,
  NO_FAULTS,
  STUB_DROP_FAULTS,
  STUB_OUTPUT_FAULTS,
  stubFaultConfigSchema,
} from './faults';
export type {
  StubDropFault,
  StubFaultConfig,
  StubFaultConfigInput,
  StubFaults,
  StubOutputFault,
} from './faults';
export { estimateTokens as estimateStubTokens } from './completions';
export { FORGED_FRAMING_LINES } from './forged-framing';
export { RECALL_TOOL, stubChecksum } from './agent';
export { toolPairing } from './conversation';
export { thinkingSignature } from './anthropic-wire';
export type {
  StubMessage,
  StubProtocol,
  StubToolCallPart,
  StubToolResult,
  ToolPairing,
} from './conversation';
