/**
 * An SSH connection's channels, as a session uses them: a command line run and collected, a
 * long-lived helper channel started behind its marker line, and the marker lines that tell a
 * login script's chatter from our answers.
 */
import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type { Client, ClientChannel } from 'ssh2';
import { CudamatrixError } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import { withTimeout } from '../../core/timeout.ts';

export interface RawResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command line on the connection and collects its output (for setup commands on Windows
 * hosts, and shell detection). Bounded: after `timeoutMs` the channel is closed and it fails.
 */
export function run(
  client: Client,
  command: string,
  options: { stdin?: string; timeoutMs?: number; what?: string } = {},
): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, stream) => {
      if (err) return reject(transportFailed(err));
      let stdout = '';
      let stderr = '';
      const timer =
        options.timeoutMs !== undefined
          ? setTimeout(() => {
              stream.close();
              reject(
                new CudamatrixError(
                  'TRANSPORT_FAILED',
                  `${options.what ?? 'a setup command'} did not finish within ${options.timeoutMs} ms (connectTimeout): ${oneLine(stdout + stderr, LAST_WORDS) || 'no output'}`,
                ),
              );
            }, options.timeoutMs)
          : undefined;
      stream.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      stream.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      stream.on('close', (code: number | null, signal?: string) => {
        clearTimeout(timer);
        resolve({ code: code ?? null, signal: signal ?? null, stdout, stderr });
      });
      stream.end(options.stdin);
    });
  });
}

/** A fresh nonce for a marker line ("cm-KIND-NONCE"). */
export function newNonce(): string {
  return randomBytes(8).toString('hex');
}

/**
 * What a command printed after its marker line: login scripts (~/.bashrc, a PowerShell
 * profile) may print anything before it. Undefined when the marker never came.
 */
export function afterMarker(text: string, marker: string): string | undefined {
  const at = text.indexOf(marker);
  if (at < 0) return undefined;
  return text.slice(at + marker.length).replace(/^\r?\n/, '');
}

/** The end of what a remote command printed, on one line, for an error message. */
export const LAST_WORDS = { keep: 'end', max: 300 } as const;

/**
 * Drops what comes before a marker line in a stream of text (a login script's chatter on a
 * command's own channel) and passes the rest on. Holds back at most a marker's length while
 * it looks; keeps at most `keep` characters of the chatter, for messages.
 */
export class MarkerStrip {
  private held = '';
  private state: 'looking' | 'line-end' | 'passing' = 'looking';
  chatter = '';
  /** What followed the marker on its line (a Windows command's shell PID), once the line ended. */
  rest?: string;
  /** Called with `rest` when the marker's line has ended. */
  onLine?: (rest: string) => void;

  constructor(
    private readonly marker: string,
    private readonly keep = 4096,
  ) {}

  /** Whether the marker came. */
  get seen(): boolean {
    return this.state !== 'looking';
  }

  /** The text to pass on ('' while the marker is still awaited). */
  feed(text: string): string {
    if (this.state === 'passing') return text;
    if (this.state === 'looking') {
      this.held += text;
      const at = this.held.indexOf(this.marker);
      if (at < 0) {
        // Everything but a possible start of the marker is chatter.
        const cut = Math.max(0, this.held.length - this.marker.length);
        this.noteChatter(this.held.slice(0, cut));
        this.held = this.held.slice(cut);
        return '';
      }
      this.noteChatter(this.held.slice(0, at));
      text = this.held.slice(at + this.marker.length);
      this.held = '';
      this.state = 'line-end';
    }
    // The rest of the marker's line, up to its end ("\n", or "\r\n" from PowerShell), which may
    // come in later chunks. A marker line is short: past 80 characters the rest is output.
    this.held += text;
    const nl = this.held.indexOf('\n');
    if (nl < 0 && this.held.length <= 80) return '';
    const line = nl < 0 ? '' : this.held.slice(0, nl);
    const out = nl < 0 ? this.held : this.held.slice(nl + 1);
    this.held = '';
    this.state = 'passing';
    this.rest = line.replace(/\r$/, '').trim();
    this.onLine?.(this.rest);
    return out;
  }

  /** At the end of the stream: if the marker never came, what was printed is all there was. */
  end(): string {
    if (this.state === 'line-end') {
      // The stream ended on the marker's line.
      this.rest = this.held.replace(/\r$/, '').trim();
      this.held = '';
      this.state = 'passing';
      this.onLine?.(this.rest);
      return '';
    }
    if (this.seen) return '';
    const rest = this.chatter + this.held;
    this.held = '';
    return rest;
  }

  /**
   * For messages, without changing what end() gives: everything that was not the command's own
   * output (the chatter; when the marker never came, what was held back as well).
   */
  printedBefore(): string {
    return this.seen ? this.chatter : this.chatter + this.held;
  }

  private noteChatter(text: string): void {
    if (text) this.chatter = (this.chatter + text).slice(-this.keep);
  }
}

export function transportFailed(err: Error): CudamatrixError {
  return new CudamatrixError('TRANSPORT_FAILED', `the SSH connection failed: ${err.message}`, { cause: err });
}

export interface HelperOutput {
  onStdout(handler: (text: string) => void): void;
  onStderr(handler: (text: string) => void): void;
}

export type Started =
  | { ok: true; channel: ClientChannel; /** The rest of the marker's line. */ line: string; output: HelperOutput; close(): Promise<void> }
  | { ok: false; why: string };

/**
 * Starts a long-lived helper channel and waits for its marker line on stdout: what a login
 * script printed before is dropped (on stderr too, up to `stderrMarker`, when given). What
 * follows goes to the handlers the caller installs. Fails when the channel closes first, or
 * when no marker came within `timeoutMs` (the channel is then closed); either way the helper,
 * if it started, removes what it made (agent.sh's trap).
 */
export function startHelper(
  client: Client,
  command: string,
  options: { marker: string; stderrMarker?: string; timeoutMs: number },
): Promise<Started> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, channel) => {
      if (err) return reject(transportFailed(err));
      const out = new StringDecoder('utf8');
      const errs = new StringDecoder('utf8');
      const errStrip = options.stderrMarker ? new MarkerStrip(options.stderrMarker) : undefined;
      /** stdout up to the end of the marker's line; then what follows, until a handler takes it. */
      let head = '';
      let lineDone = false;
      let pending = '';
      let pendingErr = '';
      let settled = false;
      let onOut: ((text: string) => void) | undefined;
      let onErr: ((text: string) => void) | undefined;
      const closed = new Promise<void>((resolveClosed) => channel.on('close', () => resolveClosed()));
      const close = async (): Promise<void> => {
        channel.end();
        await withTimeout(closed, 5_000);
      };
      const output: HelperOutput = {
        onStdout(handler) {
          onOut = handler;
          if (pending) handler(pending);
          pending = '';
        },
        onStderr(handler) {
          onErr = handler;
          if (pendingErr) handler(pendingErr);
          pendingErr = '';
        },
      };
      const said = () => oneLine(`${head} ${errStrip ? errStrip.printedBefore() : pendingErr}`, LAST_WORDS);
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ok: false, why });
      };
      const timer = setTimeout(() => {
        fail(
          `the remote shell did not start cudamatrix's helper within ${options.timeoutMs} ms (connectTimeout): does a login script (~/.bashrc, ~/.profile, a PowerShell profile) wait for input? It printed: ${said() || 'nothing'}`,
        );
        channel.close();
      }, options.timeoutMs);
      channel.stderr.on('data', (chunk: Buffer) => {
        const text = errStrip ? errStrip.feed(errs.write(chunk)) : errs.write(chunk);
        if (onErr) onErr(text);
        else pendingErr += text;
      });
      channel.on('data', (chunk: Buffer) => {
        const text = out.write(chunk);
        if (onOut) return onOut(text);
        if (lineDone) {
          pending += text;
          return;
        }
        head += text;
        const at = head.indexOf(options.marker);
        const nl = at < 0 ? -1 : head.indexOf('\n', at);
        if (nl < 0) {
          // Still chatter: keep only its end (for a message), and what may be a marker's start.
          if (at < 0 && head.length > 8192) head = head.slice(-4096);
          return;
        }
        const line = head.slice(at + options.marker.length, nl).replace(/\r$/, '');
        pending = head.slice(nl + 1);
        head = head.slice(0, at);
        lineDone = true;
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ok: true, channel, line, output, close });
      });
      channel.on('close', () => {
        const printed = said();
        fail(
          printed
            ? `the remote shell ended before cudamatrix's helper started; it printed: ${printed}`
            : "the remote shell ended before cudamatrix's helper started, and printed nothing",
        );
      });
    });
  });
}

export function signalName(signalNumber: number): string {
  return ({ 1: 'SIGHUP', 2: 'SIGINT', 9: 'SIGKILL', 15: 'SIGTERM' } as Record<number, string>)[signalNumber] ?? `SIG${signalNumber}`;
}
