/**
 * Code points that Node's Unicode (17.0 in Node 20's ICU) assigns as letters, numbers or marks
 * but that tiktoken's Rust regex tables (Unicode 16.0) leave unassigned: the scripts and
 * ideographs Unicode 17.0 added (CJK Extension J, Sidetic, Tolong Siki, Beria Erfe, Tai Yo, and
 * additions to older blocks). tiktoken splits such a code point as an unassigned one (with
 * punctuation and symbols), so the splitter must too, or `"\u{323B0}_A"` counts 5 tokens where
 * tiktoken counts 6. Inclusive ranges, sorted; `reference-unicode.test.ts` rebuilds the list
 * from tiktoken itself and fails when a Node or tiktoken upgrade moves either side.
 */
export const UNASSIGNED_IN_REFERENCE: ReadonlyArray<readonly [first: number, last: number]> = [
  [0x88f, 0x88f],
  [0xc5c, 0xc5c],
  [0xcdc, 0xcdc],
  [0x1acf, 0x1add],
  [0x1ae0, 0x1aeb],
  [0xa7ce, 0xa7cf],
  [0xa7d2, 0xa7d2],
  [0xa7d4, 0xa7d4],
  [0xa7f1, 0xa7f1],
  [0x10940, 0x10959],
  [0x10ec5, 0x10ec7],
  [0x10efa, 0x10efb],
  [0x11b60, 0x11b67],
  [0x11db0, 0x11ddb],
  [0x11de0, 0x11de9],
  [0x16ea0, 0x16eb8],
  [0x16ebb, 0x16ed3],
  [0x16ff2, 0x16ff6],
  [0x187f8, 0x187ff],
  [0x18d09, 0x18d1e],
  [0x18d80, 0x18df2],
  [0x1e6c0, 0x1e6de],
  [0x1e6e0, 0x1e6f5],
  [0x1e6fe, 0x1e6ff],
  [0x2b73a, 0x2b73f],
  [0x2cea2, 0x2cead],
  [0x323b0, 0x33479],
];

/** Whether tiktoken's Unicode leaves `codePoint` unassigned where Node's assigns it. */
export function unassignedInReference(codePoint: number): boolean {
  let low = 0;
  let high = UNASSIGNED_IN_REFERENCE.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const [first, last] = UNASSIGNED_IN_REFERENCE[middle]!;
    if (codePoint < first) high = middle - 1;
    else if (codePoint > last) low = middle + 1;
    else return true;
  }
  return false;
}
