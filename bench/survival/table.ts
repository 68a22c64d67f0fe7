/**
 * The survival table: one row per system × window × summarizer, one column per class, each
 * `present % / recoverable %` over every measured compaction (recoverable: of all items, those
 * missing from the context that recall found). Markdown, so it prints and pastes into the docs.
 */
import { CLASS_LABELS, SURVIVAL_CLASSES } from './items';
import { shareCell, type SurvivalCounts } from './measure';

export interface SurvivalRow {
  system: string;
  window: number;
  summarizer: string;
  /** Transcripts whose run made a chain of enough compactions to be measured. */
  transcripts: number;
  compactions: number;
  counts: SurvivalCounts;
}

export function renderSurvivalTable(rows: readonly SurvivalRow[]): string {
  const head = [
    'system',
    'window',
    'summarizer',
    'transcripts',
    'compactions',
    ...SURVIVAL_CLASSES.map((c) => CLASS_LABELS[c]),
    'modified files',
  ];
  const lines = [head, head.map(() => '---')];
  for (const row of rows) {
    lines.push([
      row.system,
      `${row.window / 1000}k`,
      row.summarizer,
      String(row.transcripts),
      String(row.compactions),
      ...SURVIVAL_CLASSES.map((c) => shareCell(row.counts[c])),
      shareCell(row.counts.modifiedFiles),
    ]);
  }
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
