import { describe, expect, it } from 'vitest';
import { openAIChatElements } from './openai-elements';
import { suffixWrites } from './suffix-writes';

const call = (id: string, name = 'read') => ({ id, type: 'function', function: { name, arguments: '{}' } });

// A two-step tool loop whose provider numbers its calls per turn (call_0 every time).
const loop = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Read both files' },
  { role: 'assistant', content: null, tool_calls: [call('call_0'), call('call_1')] },
  { role: 'tool', tool_call_id: 'call_0', content: 'first' },
  { role: 'tool', tool_call_id: 'call_1', content: 'second' },
  { role: 'assistant', content: 'One more.', tool_calls: [call('call_0', 'grep')] },
  { role: 'tool', tool_call_id: 'call_0', content: 'third' },
];

describe('suffixWrites', () => {
  it('writes every result on the call appended in the same batch, the newest call of that id', () => {
    const { appends, patches } = suffixWrites(openAIChatElements(loop), 0);
    expect(patches).toEqual([]);
    expect(appends.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'assistant']);
    expect(appends[2]!.parts).toMatchObject([
      { callId: 'call_0', status: 'completed', output: 'first', error: null },
      { callId: 'call_1', status: 'completed', output: 'second', error: null },
    ]);
    expect(appends[3]!.parts).toMatchObject([
      { type: 'text', text: 'One more.' },
      { callId: 'call_0', tool: 'grep', status: 'completed', output: 'third' },
    ]);
  });

  it('keeps the element ids and leaves the elements themselves unchanged', () => {
    const elements = openAIChatElements(loop);
    const { appends } = suffixWrites(elements, 0);
    expect(appends.map((m) => m.id)).toEqual([0, 1, 2, 5].map((i) => elements[i]!.message!.id));
    expect(elements[2]!.message!.parts).toMatchObject([{ status: 'pending' }, { status: 'pending' }]);
  });

  it('returns results for calls stored earlier as patches, and writes nothing before fromPosition', () => {
    const { appends, patches } = suffixWrites(openAIChatElements(loop), 3);
    expect(patches).toEqual([
      { callId: 'call_0', output: 'first', error: null },
      { callId: 'call_1', output: 'second', error: null },
    ]);
    expect(appends).toHaveLength(1);
    expect(appends[0]!.parts).toMatchObject([
      { type: 'text' },
      { callId: 'call_0', status: 'completed', output: 'third' },
    ]);
  });

  it('has nothing to write past the end', () => {
    expect(suffixWrites(openAIChatElements(loop), loop.length)).toEqual({ appends: [], patches: [] });
  });

  it('marks an error result as an error part', () => {
    const elements = openAIChatElements(loop.slice(0, 3));
    elements.push({
      ...elements[1]!,
      position: 3,
      message: null,
      toolResults: [{ callId: 'call_1', output: null, error: 'denied' }],
    });
    const { appends } = suffixWrites(elements, 0);
    expect(appends[2]!.parts[1]).toMatchObject({
      callId: 'call_1',
      status: 'error',
      output: null,
      error: 'denied',
    });
    expect(appends[2]!.parts[0]).toMatchObject({ callId: 'call_0', status: 'pending' });
  });
});
