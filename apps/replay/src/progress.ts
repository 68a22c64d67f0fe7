/**
 * A live progress bar per run. On a terminal the lines are redrawn in place (at most ten times a
 * second); in a log (CI, a pipe) a line is written when a run starts waiting for a compaction and
 * when it ends, never one per message.
 */
import type { RunProgress } from './runner/replay-run';

const BAR = 20;

/** Where the progress, the table and the notes go (stdout, or a test's buffer). */
export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
}

export function progressLine(label: string, p: RunProgress): string {
  const done = p.total === 0 ? 1 : p.appended / p.total;
  const cells = Math.round(done * BAR);
  const percent = p.usable > 0 ? Math.round((p.tokens / p.usable) * 100) : 0;
  const state = p.state === 'waiting' ? 'waiting for compaction' : p.state;
  return `${label.padEnd(40).slice(0, 40)} ${'█'.repeat(cells)}${'·'.repeat(BAR - cells)} ${String(p.appended).padStart(5)}/${p.total}  context ${String(percent).padStart(3)} %  ${p.compactions} compactions  ${state}`;
}

export class ProgressBoard {
  private readonly lines = new Map<string, RunProgress>();
  private drawn = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly lastState = new Map<string, RunProgress['state']>();

  constructor(private readonly out: Output) {}

  private get live(): boolean {
    return Boolean(this.out.isTTY);
  }

  update(label: string, progress: RunProgress): void {
    this.lines.set(label, progress);
    if (this.live) {
      this.timer ??= setTimeout(() => this.draw(), 100);
      return;
    }
    const previous = this.lastState.get(label);
    this.lastState.set(label, progress.state);
    if (progress.state !== previous && progress.state !== 'appending')
      this.out.write(`${progressLine(label, progress)}\n`);
  }

  private draw(): void {
    this.timer = null;
    if (this.drawn > 0) this.out.write(`\x1b[${this.drawn}A`);
    for (const [label, progress] of this.lines) this.out.write(`\x1b[2K${progressLine(label, progress)}\n`);
    this.drawn = this.lines.size;
  }

  /** Draws the final state (a terminal) and stops redrawing. */
  finish(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.live) this.draw();
  }
}
