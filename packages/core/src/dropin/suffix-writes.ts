/**
 * What a request adds to its session: the elements from the first one not yet stored, as
 * appends and tool-result patches. A tool part always carries its call and its result (the
 * store's rule), so a result whose call is appended in the same batch is written on that part,
 * and a result for a call stored earlier is a PATCH of the message that holds it.
 */
import type { PartInput } from '@compactor/contract';
import type { AppendMessageInput, ConversationElement, ToolResultWrite } from './elements';

/** The writes for the elements from `fromPosition` on, in order. */
export function suffixWrites(
  elements: readonly ConversationElement[],
  fromPosition: number,
): { appends: AppendMessageInput[]; patches: ToolResultWrite[] } {
  const appends: AppendMessageInput[] = [];
  const patches: ToolResultWrite[] = [];
  // callId → the newest appended tool part with it: providers that number calls per turn
  // (`call_0` every turn) send a result right after the call it answers.
  const openCalls = new Map<string, { append: number; part: number }>();
  for (const element of elements) {
    if (element.position < fromPosition) continue;
    for (const result of element.toolResults) {
      const place = openCalls.get(result.callId);
      if (place === undefined) {
        patches.push(result);
        continue;
      }
      const message = appends[place.append]!;
      const parts = [...message.parts];
      parts[place.part] = withResult(parts[place.part]!, result);
      // The result's files go last: the calls' places in the message stay where openCalls says.
      parts.push(...(result.files ?? []));
      appends[place.append] = { ...message, parts };
    }
    if (element.message === null) continue;
    appends.push(element.message);
    element.message.parts.forEach((part, index) => {
      if (part.type === 'tool') openCalls.set(part.callId, { append: appends.length - 1, part: index });
    });
  }
  return { appends, patches };
}

function withResult(part: PartInput, result: ToolResultWrite): PartInput {
  if (part.type !== 'tool') return part;
  return result.error !== null
    ? { ...part, status: 'error', output: null, error: result.error }
    : { ...part, status: 'completed', output: result.output ?? '', error: null };
}
