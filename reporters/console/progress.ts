/**
 * The console's live progress line, on a terminal only: elapsed time, cells done and what runs
 * now, rewritten in place at most ten times a second.
 */
/** The terminal it is drawn on (the console's stream). */
interface Terminal {
  write(text: string): unknown;
  columns?: number;
}

const spinner = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** The progress line is redrawn on this tick only: at most ten times a second. */
const PROGRESS_TICK_MS = 100;
const CLEAR_LINE = '\r\u001b[K';

export class ProgressLine {
  /** The cells running now, with when each started. */
  readonly running = new Map<string, number>();
  private shown = '';
  private timer: ReturnType<typeof setInterval> | undefined;
  private frame = 0;

  constructor(
    private readonly out: Terminal,
    private readonly paint: (text: string) => string,
    private readonly counts: () => { startedAt: number; done: number; total: number },
  ) {}

  /** Starts redrawing (once). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.draw(), PROGRESS_TICK_MS);
    this.timer.unref?.();
  }

  /** Clears the line, so that a line can be written in its place. */
  clear(): void {
    if (!this.shown) return;
    this.out.write(CLEAR_LINE);
    this.shown = '';
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.running.clear();
    this.clear();
  }

  private draw(): void {
    this.frame = (this.frame + 1) % spinner.length;
    // Nothing runs (targets connecting, cudaprobe compiling): no line, so that what those steps
    // print is not written into it.
    const text = this.running.size ? fit(this.text(), (this.out.columns || 80) - 1) : '';
    if (text === this.shown) return;
    if (!text) return this.clear();
    this.out.write(`\r${this.paint(text)}\u001b[K`);
    this.shown = text;
  }

  private text(): string {
    const now = Date.now();
    const { startedAt, done, total } = this.counts();
    const cells = [...this.running].map(([cell, since]) => `${cell} ${clock(now - since)}`);
    const more = cells.length > 2 ? ` and ${cells.length - 2} more` : '';
    return `${spinner[this.frame]} ${clock(now - startedAt)}  ${done}/${total} cells done  running ${cells.slice(0, 2).join(', ')}${more}`;
  }
}

/** 75 s -> "1:15"; an hour and more -> "1:02:03". */
export function clock(ms: number): string {
  const totalSeconds = Math.max(0, Math.floor(ms / 1000));
  const [hours, minutes, seconds] = [Math.floor(totalSeconds / 3600), Math.floor((totalSeconds % 3600) / 60), totalSeconds % 60];
  const two = (part: number) => String(part).padStart(2, '0');
  return hours ? `${hours}:${two(minutes)}:${two(seconds)}` : `${minutes}:${two(seconds)}`;
}

/** Cuts a line to a terminal's width, so that it never wraps (a wrapped line cannot be rewritten). */
function fit(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}
