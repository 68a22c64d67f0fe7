/**
 * How much of the ledger block the directories of the files it does not list may take (render.ts
 * fills its sections first, then asks this module). Every file should be named at least by its
 * group, so the directories take precedence over listing more read files one by one, and over
 * the newest commands and facts when nothing else makes room: those stay counted on the overflow
 * line and listed in full by recall, while a file left out of every group is named nowhere.
 */

/** Fewest directories worth making room for: the finest cover with at most this many entries. */
export const WANTED_DIRECTORIES = 8;

export interface DirectoryChoice {
  /** Entries shown per section, as the renderer fills them, without directories. */
  counts: readonly number[];
  /** The section of read files (its entries give way first). */
  read: number;
  /** Sections whose newest entries may give way next, in that order (commands, facts, …). */
  yielding: readonly number[];
  /** Whether a rendering of `counts` with `directories` fits the budget. */
  fits: (counts: readonly number[], directories: readonly string[]) => boolean;
  /** The covers of the files `counts` leaves out, finest first (`directoryCovers`). */
  covers: (counts: readonly number[]) => string[][];
}

/** The counts and directories to render: `counts` unchanged and none when no cover fits. */
export function chooseDirectories(choice: DirectoryChoice): { counts: number[]; directories: string[] } {
  const { fits, covers } = choice;
  const none = { counts: [...choice.counts], directories: [] };
  if (covers(choice.counts).length === 0) return none;
  const wanted = (options: string[][]): string[] =>
    options.find((cover) => cover.length <= WANTED_DIRECTORIES) ?? options.at(-1)!;
  const wantedFits = (counts: readonly number[]): boolean => {
    const options = covers(counts);
    return options.length > 0 && fits(counts, wanted(options));
  };
  const setting = (counts: readonly number[], at: number, n: number): number[] =>
    counts.map((value, index) => (index === at ? n : value));
  /** The largest count of section `at` (up to its current one) with which the wanted cover fits. */
  const largest = (counts: readonly number[], at: number): number | null => {
    let high = counts[at] ?? 0;
    if (wantedFits(setting(counts, at, high))) return high;
    if (!wantedFits(setting(counts, at, 0))) return null;
    let low = 0;
    while (low < high - 1) {
      const middle = Math.floor((low + high) / 2);
      if (wantedFits(setting(counts, at, middle))) low = middle;
      else high = middle;
    }
    return low;
  };

  let counts = [...choice.counts];
  const read = largest(counts, choice.read);
  if (read !== null) counts = setting(counts, choice.read, read);
  else {
    // No read file listed leaves room enough: the newest commands, then facts, give way.
    counts = setting(counts, choice.read, 0);
    let made = false;
    for (const at of choice.yielding) {
      const n = largest(counts, at);
      counts = setting(counts, at, n ?? 0);
      if (n !== null) {
        made = true;
        break;
      }
    }
    if (!made) return none;
  }
  const options = covers(counts);
  // The finest cover that fits beside them (fewer directories cost less).
  let finest = options.indexOf(wanted(options));
  let coarse = 0;
  while (coarse < finest) {
    const middle = Math.floor((coarse + finest) / 2);
    if (fits(counts, options[middle]!)) finest = middle;
    else coarse = middle + 1;
  }
  return { counts, directories: options[finest]! };
}
