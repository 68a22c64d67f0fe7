import { describe, expect, it } from 'vitest';
import { DropInError } from './errors';
import { forwardedHeaders, overridesOf, sessionHeaderOf } from './request-headers';

describe('the drop-in request headers', () => {
  it('reads the creation overrides, and refuses values it cannot use', () => {
    expect(overridesOf({})).toEqual({});
    expect(
      overridesOf({
        'x-compactor-context-window': '8192',
        'x-compactor-max-output-tokens': '1024',
        'x-compactor-recall': 'FALSE',
      }),
    ).toEqual({ contextWindow: 8192, maxOutputTokens: 1024, recall: false });
    for (const [name, value] of [
      ['x-compactor-context-window', '8k'],
      ['x-compactor-context-window', '0'],
      ['x-compactor-max-output-tokens', '-5'],
      ['x-compactor-max-output-tokens', '1e4'],
      ['x-compactor-recall', 'yes'],
    ] as const) {
      expect(() => overridesOf({ [name]: value })).toThrow(DropInError);
    }
  });

  it('takes a session id of printable ASCII, and nothing else', () => {
    expect(sessionHeaderOf({ 'x-compactor-session': 'agent-7' })).toBe('agent-7');
    expect(sessionHeaderOf({ 'x-compactor-session': '' })).toBeUndefined();
    for (const bad of ['two words', 'ünïcode', '..', 'x'.repeat(201)])
      expect(() => sessionHeaderOf({ 'x-compactor-session': bad })).toThrow(DropInError);
  });

  it("passes on the client's provider headers, never credentials or Compactor's own", () => {
    expect(
      forwardedHeaders({
        authorization: 'Bearer compactor-key',
        'x-api-key': 'compactor-key',
        'x-upstream-api-key': 'sk-provider',
        'x-compactor-session': 's1',
        'x-stainless-os': 'Linux',
        'x-forwarded-for': '10.0.0.1',
        cookie: 'a=b',
        'content-type': 'application/json',
        'openai-organization': 'org-1',
        'x-stub-agent-steps': '2',
      }),
    ).toEqual({ 'openai-organization': 'org-1', 'x-stub-agent-steps': '2' });
  });
});
