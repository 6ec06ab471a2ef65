// What a local run shows. On a terminal: one status line (stage, percent, elapsed, time left) redrawn in place,
// with warnings and errors above it. Elsewhere, or with --verbose, the engine's log lines as they come; with
// --quiet, errors only. The summary is printed by the caller in every mode.

export type Verbosity = 'quiet' | 'normal' | 'verbose';

const clock = (ms: number) => {
  const seconds = Math.max(0, Math.round(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
};

/** The status line: the stage, a bar, the percent, the time so far and an estimate of the time left. */
export function statusLine(stage: string, percent: number, elapsedMs: number, width = 24): string {
  const filled = Math.round((Math.min(100, percent) / 100) * width);
  const left = percent >= 1 && percent < 100 ? clock((elapsedMs * (100 - percent)) / percent) : '--:--:--';
  return `${stage.padEnd(18)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${percent.toFixed(0).padStart(3)}%  elapsed ${clock(elapsedMs)}  left ~${left}`;
}

export class Display {
  private readonly started = Date.now();
  private status = '';

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly verbosity: Verbosity,
  ) {}

  private get live(): boolean {
    return Boolean(this.out.isTTY) && this.verbosity !== 'quiet';
  }

  /** A line of the engine's log, shown or not by its level and the mode. */
  log(line: string): void {
    const important = /^\[(ERROR|WARNING)\]/.test(line);
    const shown = this.verbosity === 'verbose' || (this.verbosity === 'quiet' ? line.startsWith('[ERROR]') : important || !this.live);
    if (!shown) return;
    if (this.live) this.out.write('\r\x1b[2K');
    this.out.write(`${line}\n`);
    if (this.live && this.status) this.out.write(this.status);
  }

  progress(stage: string, percent: number): void {
    if (!this.live) return;
    this.status = statusLine(stage, percent, Date.now() - this.started, 24).slice(0, (this.out.columns ?? 120) - 1);
    this.out.write(`\r\x1b[2K${this.status}`);
  }

  /** Ends the status line so that what follows starts on a line of its own. */
  end(): void {
    if (this.live && this.status) this.out.write('\n');
    this.status = '';
  }
}
