/**
 * The structured summary the stub writes (Opal's sections), as data: rendered to markdown, read
 * back from a previous summary, and merged so that an update keeps what the earlier summary
 * knew, the way the update prompt asks a real model to.
 */

export interface SummaryFacts {
  goal: string | null;
  constraints: string[];
  done: string[];
  inProgress: string[];
  blocked: string[];
  decisions: string[];
  nextSteps: string[];
  criticalContext: string[];
  readFiles: string[];
  modifiedFiles: string[];
}

export function emptyFacts(): SummaryFacts {
  return {
    goal: null,
    constraints: [],
    done: [],
    inProgress: [],
    blocked: [],
    decisions: [],
    nextSteps: [],
    criticalContext: [],
    readFiles: [],
    modifiedFiles: [],
  };
}

/** Caps keep repeated merges bounded, like a model's output budget would. */
const LIMITS = {
  constraints: 10,
  done: 12,
  blocked: 5,
  decisions: 8,
  nextSteps: 4,
  criticalContext: 10,
} as const;

type ListKey =
  'constraints' | 'done' | 'inProgress' | 'blocked' | 'decisions' | 'nextSteps' | 'criticalContext';

const HEADINGS: ReadonlyArray<[RegExp, ListKey | 'goal' | 'progress']> = [
  [/^(goal|original request)\b/i, 'goal'],
  [/^constraints/i, 'constraints'],
  [/^progress|^early progress/i, 'progress'],
  [/^attempted so far/i, 'done'],
  [/^intermediate results/i, 'criticalContext'],
  [/^done\b/i, 'done'],
  [/^in progress/i, 'inProgress'],
  [/^blocked/i, 'blocked'],
  [/^key decisions|^decisions/i, 'decisions'],
  [/^next steps/i, 'nextSteps'],
  [/^critical context|^context for suffix/i, 'criticalContext'],
];

/** A line without its list marker (`- `, `* `, `1. `) or checkbox. */
export function stripBullet(line: string): string {
  return line
    .replace(/^\s*(?:[-*]|\d+\.)\s+/, '')
    .replace(/^\[[ xX]\]\s+/, '')
    .trim();
}

/**
 * Reads a summary in the stub's own format (or anything close: unknown headings and loose lines
 * land in critical context, so nothing a previous summary said is silently dropped).
 */
export function parseSummary(text: string): SummaryFacts {
  const facts = emptyFacts();
  facts.readFiles = blockPaths(text, 'read-files');
  facts.modifiedFiles = blockPaths(text, 'modified-files');
  const body = text.replace(/<(read-files|modified-files)>[\s\S]*?<\/\1>/g, '');
  let section: ListKey | 'goal' | 'progress' | null = null;
  for (const rawLine of body.split(/\r?\n/)) {
    const heading = /^#{1,4}\s+(.+?)\s*$/.exec(rawLine);
    if (heading?.[1] !== undefined) {
      const title = heading[1];
      section = HEADINGS.find(([pattern]) => pattern.test(title))?.[1] ?? null;
      continue;
    }
    const line = stripBullet(rawLine);
    if (line === '' || /^\(none\)$/i.test(line)) continue;
    if (section === 'goal') facts.goal = facts.goal === null ? line : `${facts.goal} ${line}`;
    else if (section === null || section === 'progress') facts.criticalContext.push(line);
    else facts[section].push(line);
  }
  return facts;
}

function blockPaths(text: string, tag: string): string[] {
  const paths: string[] = [];
  for (const match of text.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))) {
    paths.push(
      ...(match[1] ?? '')
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter((line) => line !== ''),
    );
  }
  return paths;
}

function union(older: readonly string[], newer: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const item of [...older, ...newer]) {
    const key = item.toLowerCase();
    if (!seen.has(key)) {
      seen.add(key);
      out.push(item);
    }
  }
  return out;
}

/** Oldest first is what survives: the first constraints and facts of a session are the ones lost otherwise. */
function keepOldest(items: string[], limit: number): string[] {
  return items.slice(0, limit);
}

function keepNewest(items: string[], limit: number): string[] {
  return items.slice(Math.max(0, items.length - limit));
}

/**
 * `previous` updated with what `latest` (the new transcript) shows: the goal stays, lists grow
 * (bounded), the current state (in progress, blocked, next steps) is the latest one when the new
 * part says anything about it.
 */
export function mergeFacts(previous: SummaryFacts, latest: SummaryFacts): SummaryFacts {
  const modifiedFiles = union(previous.modifiedFiles, latest.modifiedFiles).sort();
  const modified = new Set(modifiedFiles);
  return {
    goal: previous.goal ?? latest.goal,
    constraints: keepOldest(union(previous.constraints, latest.constraints), LIMITS.constraints),
    done: keepNewest(union(previous.done, latest.done), LIMITS.done),
    inProgress: latest.inProgress.length > 0 ? latest.inProgress : previous.inProgress,
    blocked: keepNewest(latest.blocked.length > 0 ? latest.blocked : previous.blocked, LIMITS.blocked),
    decisions: keepOldest(union(previous.decisions, latest.decisions), LIMITS.decisions),
    nextSteps: keepNewest(
      latest.nextSteps.length > 0 ? latest.nextSteps : previous.nextSteps,
      LIMITS.nextSteps,
    ),
    criticalContext: keepOldest(
      union(previous.criticalContext, latest.criticalContext),
      LIMITS.criticalContext,
    ),
    readFiles: union(previous.readFiles, latest.readFiles)
      .filter((path) => !modified.has(path))
      .sort(),
    modifiedFiles,
  };
}

function bullets(items: readonly string[], prefix = '- '): string {
  return items.length === 0 ? '- (none)' : items.map((item) => `${prefix}${item}`).join('\n');
}

/** The turn-prefix format core's prompt asks for: what this turn attempted and found so far. */
export function renderTurnPrefixSummary(facts: SummaryFacts): string {
  const attempted = [...facts.done, ...facts.blocked];
  const intermediate = [...facts.inProgress, ...facts.decisions, ...facts.criticalContext];
  return [
    `## Original Request\n${facts.goal ?? '(not stated)'}`,
    `## Attempted So Far\n${bullets(attempted)}`,
    `## Intermediate Results\n${bullets(intermediate)}`,
  ].join('\n\n');
}

export function renderSummary(facts: SummaryFacts): string {
  const sections = [
    `## Goal\n${facts.goal ?? '(not stated)'}`,
    `## Constraints & Preferences\n${bullets(facts.constraints)}`,
    [
      '## Progress',
      `### Done\n${bullets(facts.done, '- [x] ')}`,
      `### In Progress\n${bullets(facts.inProgress, '- [ ] ')}`,
      `### Blocked\n${bullets(facts.blocked)}`,
    ].join('\n'),
    `## Key Decisions\n${bullets(facts.decisions)}`,
    `## Next Steps\n${facts.nextSteps.length === 0 ? '- (none)' : facts.nextSteps.map((step, i) => `${i + 1}. ${step}`).join('\n')}`,
    `## Critical Context\n${bullets(facts.criticalContext)}`,
  ];
  if (facts.readFiles.length > 0) sections.push(`<read-files>\n${facts.readFiles.join('\n')}\n</read-files>`);
  if (facts.modifiedFiles.length > 0) {
    sections.push(`<modified-files>\n${facts.modifiedFiles.join('\n')}\n</modified-files>`);
  }
  return sections.join('\n\n');
}
