/**
 * The controller's side of the command agent (script.ts): one long-lived sh per session (in a
 * wsl.exe, in a Slurm job's lifeline step) that runs the session's commands one at a time. This
 * module speaks its protocol over the agent's stdin and stdout: it writes one request line per
 * command and reads the framed answers (a start line, a done line, then the command's stdout and
 * stderr by byte count).
 */
import type { Duplex } from 'node:stream';
import { withTimeout } from '../../core/timeout.ts';

/** What the agent said when it started: the look around and the work directory it made. */
export interface AgentHello {
  /** The lines after the hello marker, as many as AgentProtocol.infoLines (each transport's scripts.ts says which). */
  lookAround: string[];
  workDir: string;
}

export interface AgentCommand {
  started(pid: number): void;
  done(status: number, stdout: Buffer, stderr: Buffer): void;
  failed(error: Error): void;
}

/** How a transport's agent speaks: script.ts AgentScriptSpec, as the controller reads it. */
export interface AgentProtocol {
  /** The tag of its answers (cm-TAG-start, cm-TAG-done) and of its hello marker (cm-TAG-info-NONCE). */
  tag: string;
  /** How many look-around lines follow the hello marker (then the work directory). */
  infoLines: number;
  /** Whether a newline follows each command's output (AgentScriptSpec.trailer). */
  trailer: boolean;
  /** Its name in messages: "the WSL agent". */
  name: string;
}

export class ShellAgent {
  readonly hello: Promise<AgentHello>;
  private buffer: Buffer = Buffer.alloc(0);
  /** Chunks not yet joined to `buffer`: a command's output comes in many (a few KiB each through srun), joined once it is all there. */
  private unjoined: Buffer[] = [];
  private unjoinedLength = 0;
  private helloLines: string[] | undefined;
  private resolveHello!: (hello: AgentHello) => void;
  private rejectHello!: (error: Error) => void;
  private current: { nonce: string; command: AgentCommand; output?: { status: number; outLength: number; errLength: number } } | undefined;
  private ended: Error | undefined;
  private readonly closed: Promise<void>;

  /**
   * `describeEnd` turns how the stream ended into the error every waiting and later command
   * gets: the agent is gone, and with it the session.
   */
  private readonly start: RegExp;
  private readonly done: RegExp;

  constructor(
    private readonly stream: Duplex,
    private readonly nonce: string,
    private readonly protocol: AgentProtocol,
    private readonly describeEnd: (cause: Error | undefined) => Error,
  ) {
    this.start = new RegExp(`^cm-${protocol.tag}-start ([0-9a-f]+) (\\d+)$`);
    this.done = new RegExp(`^cm-${protocol.tag}-done ([0-9a-f]+) (\\d+) +(\\d+) +(\\d+)$`);
    this.hello = new Promise((resolve, reject) => {
      this.resolveHello = resolve;
      this.rejectHello = reject;
    });
    this.hello.catch(() => undefined); // a caller that never asks is not an unhandled rejection
    stream.on('data', (chunk: Buffer) => this.receive(chunk));
    stream.on('error', (error: Error) => this.end(error));
    // The agent exited (its output ended) while its stdin may still be open.
    stream.on('end', () => this.end(undefined));
    this.closed = new Promise((resolve) => stream.once('close', resolve));
    void this.closed.then(() => this.end(undefined));
  }

  /** Why the agent can no longer run commands; undefined while it can. */
  get failure(): Error | undefined {
    return this.ended;
  }

  /** Whether a command runs now (the agent runs one at a time). */
  get busy(): boolean {
    return this.current !== undefined;
  }

  /** Sends a command (a sh script); its answers come to `command`. The agent must be idle. */
  run(nonce: string, scriptText: string, command: AgentCommand): void {
    if (this.ended) return command.failed(this.ended);
    if (this.current) throw new Error(`${this.protocol.name} runs one command at a time`);
    this.current = { nonce, command };
    // As it is when `read` gives it back unchanged (one line, no blanks at its ends): no base64 to run.
    if (!/[\r\n]/.test(scriptText) && scriptText.trim() === scriptText) this.stream.write(`text ${nonce} ${scriptText}\n`);
    else this.stream.write(`run ${nonce} ${Buffer.from(scriptText, 'utf8').toString('base64')}\n`);
  }

  /** Stops the running command `nonce` (TERM to its process group, KILL 2 s later), once it has started. */
  stop(nonce: string): void {
    if (!this.ended && this.current?.nonce === nonce) this.stream.write(`stop ${nonce}\n`);
  }

  /** Ends the agent's stdin: it removes the work directory and exits. Waits `ms` at most, then kills it. */
  async close(ms: number): Promise<void> {
    if (!this.stream.destroyed) this.stream.end();
    await withTimeout(this.closed, ms);
    this.destroy();
  }

  /** Stops the agent's stream at once (its wsl.exe, its srun); the agent then cleans up by itself (script.ts). */
  destroy(error?: Error): void {
    if (error) this.end(error);
    this.stream.destroy();
  }

  private receive(chunk: Buffer): void {
    this.unjoined.push(chunk);
    this.unjoinedLength += chunk.length;
    const output = this.current?.output;
    const need = output ? output.outLength + output.errLength + (this.protocol.trailer ? 1 : 0) : 0;
    if (this.buffer.length + this.unjoinedLength < need) return;
    this.buffer = Buffer.concat([this.buffer, ...this.unjoined]);
    this.unjoined = [];
    this.unjoinedLength = 0;
    try {
      while (this.step());
    } catch (error) {
      this.destroy(error as Error);
    }
  }

  /** Takes one thing (a line, or a command's output) from the buffer; false when more is needed. */
  private step(): boolean {
    const output = this.current?.output;
    if (output) {
      const payload = output.outLength + output.errLength;
      const need = payload + (this.protocol.trailer ? 1 : 0);
      if (this.buffer.length < need) return false;
      const stdout = this.buffer.subarray(0, output.outLength);
      const stderr = this.buffer.subarray(output.outLength, payload);
      this.buffer = this.buffer.subarray(need);
      const { command } = this.current!;
      this.current = undefined;
      command.done(output.status, stdout, stderr);
      return true;
    }
    const eol = this.buffer.indexOf(10);
    if (eol < 0) return false;
    const line = this.buffer.subarray(0, eol).toString('utf8').replace(/\r$/, '');
    this.buffer = this.buffer.subarray(eol + 1);
    if (!this.helloLines) {
      // What comes before the marker (nothing, normally) is not ours.
      if (line === `cm-${this.protocol.tag}-info-${this.nonce}`) this.helloLines = [];
      return true;
    }
    const { infoLines } = this.protocol;
    if (this.helloLines.length <= infoLines) {
      this.helloLines.push(line);
      if (this.helloLines.length === infoLines + 1)
        this.resolveHello({ lookAround: this.helloLines.slice(0, infoLines), workDir: this.helloLines[infoLines]! });
      return true;
    }
    const current = this.current;
    const start = this.start.exec(line);
    if (start && current && start[1] === current.nonce) {
      current.command.started(Number(start[2]));
      return true;
    }
    const done = this.done.exec(line);
    if (done && current && done[1] === current.nonce) {
      current.output = { status: Number(done[2]), outLength: Number(done[3]), errLength: Number(done[4]) };
      return true;
    }
    throw new Error(`${this.protocol.name} said what cudamatrix does not expect: ${JSON.stringify(line.slice(0, 200))}`);
  }

  private end(cause: Error | undefined): void {
    if (this.ended) return;
    this.ended = this.describeEnd(cause);
    this.rejectHello(this.ended);
    const current = this.current;
    this.current = undefined;
    current?.command.failed(this.ended);
  }
}
