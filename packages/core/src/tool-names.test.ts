import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FILE_TOOLS } from './file-ops';
import { isToolNamed, normaliseToolName } from './tool-names';

/** The comparison before lists were normalised once: every name normalised at every comparison. */
const comparedOneByOne = (tool: string, names: readonly string[]) =>
  names.some((name) => normaliseToolName(name) === normaliseToolName(tool));

describe('isToolNamed', () => {
  it.each([
    ['Read', DEFAULT_FILE_TOOLS.read, true],
    ['read_file', DEFAULT_FILE_TOOLS.read, true],
    ['READ-FILE', DEFAULT_FILE_TOOLS.read, true],
    ['str_replace_editor', ['str_replace_editor', 'str_replace_based_edit_tool'], true],
    ['StrReplaceEditor', ['str_replace_editor'], true],
    ['bash', DEFAULT_FILE_TOOLS.read, false],
    ['', [''], true],
    ['', [], false],
  ])('%s in %j: %s', (tool, names, expected) => {
    expect(isToolNamed(tool, names)).toBe(expected);
    expect(isToolNamed(tool, names)).toBe(expected);
  });

  it('answers as comparing each name in turn does, for any names and lists', () => {
    const name = fc.oneof(
      fc.constantFrom('Read', 'read_file', 'Edit', 'write-file', 'BASH', 'ß', 'İ'),
      fc.string(),
    );
    fc.assert(
      fc.property(name, fc.array(name, { maxLength: 6 }), (tool, names) => {
        expect(isToolNamed(tool, names)).toBe(comparedOneByOne(tool, names));
        expect(isToolNamed(tool, names)).toBe(comparedOneByOne(tool, names));
      }),
      { numRuns: 3_000 },
    );
  });

  it('still answers once more names were seen than it keeps', () => {
    const names = ['read_file'];
    for (let i = 0; i < 2_500; i += 1) expect(isToolNamed(`tool_${i}`, names)).toBe(false);
    expect(isToolNamed('READ-FILE', names)).toBe(true);
  });
});
