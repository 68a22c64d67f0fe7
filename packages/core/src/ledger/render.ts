/**
 * The ledger as text for a context or a summarizer's input, within a token budget: files
 * modified, created and deleted first, then open errors, the commands run (each once, with its
 * last outcome), the user's stated facts, and files read; newest first within each, paths grouped
 * under their directory, and a long directory most of them share written once in a legend
 * (`…/`). What does not fit is named by count with the recall call that lists it, and the
 * files among it by the directories they are in, as many and as deep as the budget allows
 * (directory-cover.ts), so that every file is at least named by its group.
 *
 * Every path, command and fact is data (a tool argument, a user's words): each sits after a
 * `- ` on a line of its own, its line breaks joined into ` ↵ `, and is escaped with
 * {@link escapePromptData}, so none can pass for a line or tag the prompt builder wrote.
 */
import { escapePromptData, promptLines } from '../prompt-data';
import { directoryCovers, sharedDirectories } from './directory-cover';
import { groupPaths, ROOT_MARK, sharedRoot, underRoot } from './group-paths';
import { chooseDirectories } from './render-directories';
import { capText, type ArtifactLedger, type LedgerCommand, type LedgerFileKind } from './types';

/** The recall calls that list each kind in full. */
export const LEDGER_RECALL_CALLS = {
  files: 'recall?kind=files',
  commands: 'recall?kind=commands',
  facts: 'recall?kind=facts',
} as const;

export type LedgerRecallKind = keyof typeof LEDGER_RECALL_CALLS;

/** How the line naming what did not fit begins. */
export const LEDGER_OVERFLOW_LEAD = 'Not listed for space:';

/** First line of the rendered ledger. */
export const LEDGER_HEADING = 'What this session touched (newest first):';

/** Longest command or fact shown on its line; the stored entry keeps the rest. */
export const MAX_RENDERED_ENTRY_CHARS = 160;

const NOUNS: Record<LedgerRecallKind, [string, string]> = {
  files: ['file', 'files'],
  commands: ['command', 'commands'],
  facts: ['fact', 'facts'],
};

/** `Not listed for space: 12 files (recall?kind=files), 1 command (recall?kind=commands).` */
export function ledgerOverflowLine(omitted: Readonly<Partial<Record<LedgerRecallKind, number>>>): string {
  const parts = (Object.keys(LEDGER_RECALL_CALLS) as LedgerRecallKind[])
    .filter((kind) => (omitted[kind] ?? 0) > 0)
    .map((kind) => {
      const count = omitted[kind]!;
      const noun = NOUNS[kind][count === 1 ? 0 : 1];
      return `${count.toLocaleString('en-US')} ${noun} (${LEDGER_RECALL_CALLS[kind]})`;
    });
  return parts.length === 0 ? '' : `${LEDGER_OVERFLOW_LEAD} ${parts.join(', ')}.`;
}

/** How {@link renderLedger} fits its budget. */
export interface RenderLedgerOptions {
  maxTokens: number;
  /** Tokens of a text, as the caller counts them: the result never counts more than `maxTokens`. */
  count: (text: string) => number;
}

/** One section: its title, its entries' lines (paths under `root` shortened), how many entries it has. */
interface Section {
  title: string;
  kind: LedgerRecallKind;
  size: number;
  lines: (n: number, root: string | null) => string[];
  /** The paths of its first `n` entries (file sections only). */
  paths?: (n: number) => string[];
}

/**
 * A stored command or fact as one escaped display line: its lines joined by ` ↵ `, capped. Paths
 * are never cut (a cut path names no file); they have no line breaks to join.
 */
function shown(text: string, max = MAX_RENDERED_ENTRY_CHARS): string {
  // Every break a model or a provider may honour (FS, GS and RS included) joins, none splits.
  const oneLine = promptLines(text).join(' ↵ ');
  return escapePromptData(capText(oneLine, max), 'inline');
}

function outcomeText(command: LedgerCommand): string {
  const runs = command.count > 1 ? `${command.count} runs` : '';
  const outcome =
    command.outcome === 'unknown'
      ? ''
      : command.exitCode !== undefined
        ? `${command.outcome}, exit code ${command.exitCode}`
        : command.outcome;
  const notes = [outcome, runs].filter((note) => note !== '');
  return notes.length === 0 ? '' : ` — ${notes.join(', ')}`;
}

/**
 * The title of the section naming the directories of the files not listed (entries end in `/`),
 * and the few of them that are in no directory below the session's shared one, by name.
 */
export const DIRECTORY_SECTION_TITLE = 'Files not listed, by directory:';

/** The titles of the sections that list paths. */
export const FILE_SECTION_TITLES: readonly string[] = [
  'Files modified:',
  'Files created:',
  'Files deleted:',
  'Files read:',
];

const OPEN_ERRORS_TITLE = 'Open errors (failed, not passed since):';
const COMMANDS_TITLE = 'Commands run:';
const FACTS_TITLE = 'Stated by the user:';

function sectionsOf(ledger: ArtifactLedger): Section[] {
  const paths = (kind: LedgerFileKind): string[] =>
    ledger.files.filter((file) => file.kind === kind).map((file) => file.path);
  const fileSection = (title: string, kind: LedgerFileKind): Section => {
    const list = paths(kind);
    return {
      title,
      kind: 'files',
      size: list.length,
      lines: (n, root) =>
        groupPaths(list.slice(0, n).map((path) => underRoot(path, root))).map((group) =>
          shown(group, Infinity),
        ),
      paths: (n) => list.slice(0, n),
    };
  };
  const open = new Set(ledger.openErrors.map((error) => error.command));
  const commands = ledger.commands.filter((command) => !open.has(command.command));
  // Changed files first: a path costs a few tokens and names what the session's work is in,
  // while one open error (a multi-line command and its evidence) can cost as much as twenty paths.
  return [
    fileSection(FILE_SECTION_TITLES[0]!, 'modified'),
    fileSection(FILE_SECTION_TITLES[1]!, 'created'),
    fileSection(FILE_SECTION_TITLES[2]!, 'deleted'),
    {
      title: OPEN_ERRORS_TITLE,
      kind: 'commands',
      size: ledger.openErrors.length,
      lines: (n) =>
        ledger.openErrors
          .slice(0, n)
          .map((error) => `${shown(error.command)} — ${shown(error.evidence ?? 'failed')}`),
    },
    {
      title: COMMANDS_TITLE,
      kind: 'commands',
      size: commands.length,
      lines: (n) => commands.slice(0, n).map((command) => `${shown(command.command)}${outcomeText(command)}`),
    },
    {
      title: FACTS_TITLE,
      kind: 'facts',
      size: ledger.facts.length,
      lines: (n) => ledger.facts.slice(0, n).map((fact) => shown(fact.text)),
    },
    fileSection(FILE_SECTION_TITLES[3]!, 'read'),
  ];
}

/** How the legend line for paths written under a shared root begins and ends. */
export const ROOT_LEGEND_LEAD = `(${ROOT_MARK} at the start of a path stands for `;
export const ROOT_LEGEND_TAIL = ')';

/** The legend for paths written under a shared root. */
export function rootLegend(root: string): string {
  return `${ROOT_LEGEND_LEAD}${shown(root, Infinity)}${ROOT_LEGEND_TAIL}`;
}

function renderSections(
  sections: readonly Section[],
  shownCounts: readonly number[],
  directories: readonly string[] = [],
): string {
  const blocks: string[] = [];
  const omitted: Partial<Record<LedgerRecallKind, number>> = {};
  const root = sharedRoot([
    ...sections.flatMap((section, index) => section.paths?.(shownCounts[index] ?? 0) ?? []),
    ...directories,
  ]);
  sections.forEach((section, index) => {
    const n = shownCounts[index] ?? 0;
    omitted[section.kind] = (omitted[section.kind] ?? 0) + section.size - n;
    if (n > 0) blocks.push([section.title, ...section.lines(n, root).map((line) => `- ${line}`)].join('\n'));
  });
  if (directories.length > 0) {
    const lines = directories.map((directory) => `- ${shown(underRoot(directory, root), Infinity)}`);
    blocks.push([DIRECTORY_SECTION_TITLE, ...lines].join('\n'));
  }
  const overflow = ledgerOverflowLine(omitted);
  if (blocks.length === 0) return overflow;
  const legend = root === null ? [] : [rootLegend(root)];
  return [LEDGER_HEADING, ...legend, ...blocks, ...(overflow === '' ? [] : [overflow])].join('\n');
}

/**
 * The ledger as text of at most `maxTokens` by `count` ('' when even the overflow line does not
 * fit, or the ledger is empty). Sections fill in order, each taking as many of its newest entries
 * as still fit, so a long list of one kind cannot keep a short later one out entirely.
 */
export function renderLedger(ledger: ArtifactLedger, options: RenderLedgerOptions): string {
  const sections = sectionsOf(ledger);
  const shownCounts = sections.map(() => 0);
  const fits = (counts: readonly number[]): boolean =>
    options.count(renderSections(sections, counts)) <= options.maxTokens;
  // Every entry costs at least a token (its own line, or `, name` in a group): no more than
  // `maxTokens` entries can fit, so no trial renders more, however large the ledger.
  const most = Math.max(0, Math.floor(options.maxTokens));
  const everything = sections.map((section) => section.size);
  if (everything.reduce((sum, size) => sum + size, 0) <= most && fits(everything)) {
    return renderSections(sections, everything);
  }
  if (!fits(shownCounts)) return '';
  sections.forEach((section, index) => {
    const trial = (n: number): number[] => shownCounts.map((value, at) => (at === index ? n : value));
    const room = most - shownCounts.reduce((sum, value) => sum + value, 0);
    const largest = Math.min(section.size, room);
    if (largest <= 0) return;
    if (fits(trial(largest))) {
      shownCounts[index] = largest;
      return;
    }
    // The largest prefix that fits: rendered length grows with the prefix (the overflow count's digits aside).
    let low = 0;
    let high = largest - 1;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (fits(trial(middle))) low = middle;
      else high = middle - 1;
    }
    shownCounts[index] = low;
  });
  return withDirectories(ledger, sections, shownCounts, options);
}

/** The rendering of `shownCounts` with the directories of the files it leaves out, when some fit. */
function withDirectories(
  ledger: ArtifactLedger,
  sections: readonly Section[],
  shownCounts: readonly number[],
  options: RenderLedgerOptions,
): string {
  const shared = sharedDirectories(ledger.files.map((file) => file.path));
  const titled = (title: string) => sections.findIndex((section) => section.title === title);
  const { counts, directories } = chooseDirectories({
    counts: shownCounts,
    read: sections.length - 1,
    yielding: [titled(COMMANDS_TITLE), titled(FACTS_TITLE), titled(OPEN_ERRORS_TITLE)],
    fits: (trial, trialDirectories) =>
      options.count(renderSections(sections, trial, trialDirectories)) <= options.maxTokens,
    covers: (trial) => {
      const listed = new Set(sections.flatMap((section, index) => section.paths?.(trial[index] ?? 0) ?? []));
      const left = ledger.files.filter((file) => !listed.has(file.path)).map((file) => file.path);
      return directoryCovers(left, shared);
    },
  });
  return renderSections(sections, counts, directories);
}
