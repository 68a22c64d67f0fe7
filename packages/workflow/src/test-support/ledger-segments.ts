import type { MessageInput, PartInput } from '@compactor/contract';

/**
 * One segment of a session for the ledger's tests: a user request, then calls that read, edit
 * and test files of its own module (`src/mod<n>/…`), so each compaction of a chain covers paths
 * and commands no other covers. The read outputs are long enough that a manual compaction puts
 * the segment behind its boundary once the next segment follows it.
 */
export function ledgerSegment(n: number, turns = 3): MessageInput[] {
  const messages: MessageInput[] = [];
  const call = (turn: number, index: number) => `seg${n}_t${turn}_c${index}`;
  const tool = (callId: string, name: string, input: Record<string, unknown>, output: string): PartInput => ({
    type: 'tool',
    callId,
    tool: name,
    status: 'completed',
    input,
    output,
  });
  for (let turn = 0; turn < turns; turn++) {
    messages.push({
      id: `seg${n}_u${turn}`,
      role: 'user',
      parts: [
        { type: 'text', text: `Turn ${turn} of module ${n}: make src/mod${n}/writer.ts stream its rows.` },
      ],
    });
    messages.push({
      id: `seg${n}_a${turn}`,
      role: 'assistant',
      finish: 'tool-calls',
      parts: [
        { type: 'text', text: `Reading module ${n} before changing it.` },
        tool(call(turn, 0), 'read', { filePath: `src/mod${n}/reader_${turn}.ts` }, sourceText(n, turn)),
        tool(
          call(turn, 1),
          'edit',
          { filePath: `src/mod${n}/writer.ts`, oldString: 'collect()', newString: 'stream()' },
          `Edited src/mod${n}/writer.ts`,
        ),
        tool(call(turn, 2), 'bash', { command: `npm test -- mod${n}` }, `Tests: 12 passed (12)\nexit code 0`),
      ],
    });
    messages.push({
      id: `seg${n}_d${turn}`,
      role: 'assistant',
      finish: 'stop',
      parts: [{ type: 'text', text: `Module ${n} turn ${turn} done; the tests pass.` }],
    });
  }
  return messages;
}

/** A long, plain source file (what a read returns), different for each module and turn. */
function sourceText(n: number, turn: number): string {
  const lines: string[] = [];
  for (let line = 0; line < 400; line++) {
    lines.push(`export const value_${n}_${turn}_${line} = computeSomething(${line}, 'module ${n}');`);
  }
  return lines.join('\n');
}
