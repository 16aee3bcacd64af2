/**
 * A launcher runs one program (wsl.exe; srun or kubectl for the transports to come) where a hop
 * reaches it: on this machine as a process tree of its own, or through the previous hop's
 * session, which quotes the argv for its own shell. A transport that reaches its target through
 * such a program builds its session on a launcher and need not know which of the two it has.
 */
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { execProcessTree } from './local.ts';
import { streamProcess } from './stream.ts';
import type { ExecOptions, ExecResult, Session } from './transport.ts';

export interface Launcher {
  /** Where the program runs, for messages: "this machine", "ssh 10.0.0.5:22". */
  readonly where: string;
  /** The host key of the machine it runs on ("local" for this one). */
  readonly hostKey: string;
  /** Runs the program with these arguments (stdin, timeout, cancellation as ExecOptions). */
  run(args: string[], options?: ExecOptions): Promise<ExecResult>;
  /**
   * Options for a command that lives as long as the session: through an SSH hop to a POSIX host,
   * an (empty) stdin gives it a channel of its own instead of the session's one-at-a-time agent.
   */
  readonly longLived: Pick<ExecOptions, 'stdin'>;
  /** Runs the program with its stdin and stdout as one byte stream; absent where the hop cannot carry one. */
  stream?(args: string[]): Promise<Duplex>;
}

/** A program in a folder of this machine's PATH (executable, on POSIX), or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      if (!statSync(file).isFile()) continue;
      if (process.platform !== 'win32') accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not there, or not executable: the next folder
    }
  }
  return undefined;
}

/**
 * The program `file` on this machine. `decode`: its output is decoded from its bytes whole
 * (wsl.exe writes its own messages in UTF-16LE), where a hop could only pass on text.
 */
export function localLauncher(file: string, launcherOptions: { decode?: (bytes: Buffer) => string } = {}): Launcher {
  return {
    where: 'this machine',
    hostKey: 'local',
    run: (args, options = {}) => execProcessTree([file, ...args], { ...options, decode: options.decode ?? launcherOptions.decode }),
    longLived: {},
    stream: (args) => streamProcess([file, ...args]),
  };
}

/** The program `name`, found on the PATH of the host that the session `via` reaches. */
export function hopLauncher(via: Session, name: string): Launcher {
  return {
    where: via.description,
    hostKey: via.hostKey,
    run: (args, options) => via.exec([name, ...args], options),
    // On a POSIX host the SSH session runs commands without stdin one at a time through its
    // agent: a command that lives as long as the session must have a channel of its own.
    longLived: { stdin: '' },
    // A hop to a Windows host refuses streams (its shell is not known to pass bytes unchanged).
    stream: via.openStream && via.platform === 'linux' ? (args) => via.openStream!([name, ...args]) : undefined,
  };
}
