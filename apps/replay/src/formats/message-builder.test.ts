import { describe, expect, it } from 'vitest';
import { PartIn } from '@compactor/contract';
import { MessageBuilder, storableCallId, storableToolName } from './message-builder';

describe('tool calls from a transcript', () => {
  it.each([
    ['Read', 'Read'],
    ['mcp__github__create_issue', 'mcp__github__create_issue'],
    ['read file', 'read_file'],
    ['outil/é', 'outil__'],
    ['', 'tool'],
    ['x'.repeat(80), 'x'.repeat(64)],
  ])('store the tool name %j as %j', (tool, stored) => {
    expect(storableToolName(tool)).toBe(stored);
  });

  it.each([
    ['toolu_01A09q90qw90lq917835lq9', 'toolu_01A09q90qw90lq917835lq9'],
    ['call 1', 'call_1'],
    ['', 'call'],
    ['x'.repeat(250), 'x'.repeat(200)],
  ])('store the call id %j as %j', (callId, stored) => {
    expect(storableCallId(callId)).toBe(stored);
  });

  it('pair a result with its call by the id the transcript wrote, and build parts the API takes', () => {
    const builder = new MessageBuilder();
    builder.call('call 7', 'read file', { path: 'a.ts' });
    expect(builder.result('call 7', 'export {}', false)).toBe(true);
    const [step] = builder.finish();
    const part = step!.parts[0]!;
    expect(part).toMatchObject({
      callId: 'call_7',
      tool: 'read_file',
      status: 'completed',
      output: 'export {}',
    });
    expect(PartIn.safeParse(part).success).toBe(true);
  });
});
