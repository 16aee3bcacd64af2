/**
 * A command run through a session's agent (controller.ts), under the exec supervisor: its
 * timeout, cancellation and output cap. Shared by the transports that have an agent.
 */
import { randomBytes } from 'node:crypto';
import { quotePosix } from '../ssh/quote.ts';
import { supervise, type ExecEnd, type StopReason } from '../supervise.ts';
import type { ExecOptions, ExecResult } from '../transport.ts';
import type { ShellAgent } from './controller.ts';

/** How long a stopped command may take to be reported by the agent before the agent itself is stopped. */
const STOP_GRACE_MS = 15_000;

/** argv with the environment set, as `env NAME=VALUE... argv`. */
export function withEnv(argv: string[], env: Record<string, string> | undefined): string[] {
  const entries = Object.entries(env ?? {});
  return entries.length ? ['env', ...entries.map(([name, value]) => `${name}=${value}`), ...argv] : argv;
}

/**
 * Runs argv in `cwd` through the agent, which must be idle. A timeout or a cancellation stops
 * its process group (`onStopped` is told once it has ended); an agent that then still does not
 * report the command's end is stopped too, and the session with it. When the agent ends under
 * the command, the command rejects with `whyEnded` of the agent's error.
 */
export function runOnAgent(
  agent: ShellAgent,
  argv: string[],
  options: ExecOptions,
  cwd: string,
  whyEnded: (error: Error) => Promise<Error>,
  onStopped?: (why: StopReason) => void,
): Promise<ExecResult> {
  const nonce = randomBytes(6).toString('hex');
  const text = `cd ${quotePosix(cwd)} || exit 125; exec ${withEnv(argv, options.env).map(quotePosix).join(' ')}`;
  return supervise(argv, options, (io) => {
    let started = false;
    let stopWanted: StopReason | undefined;
    let ended = false;
    const stop = (): void => {
      agent.stop(nonce);
      setTimeout(() => {
        if (!ended) agent.destroy(new Error(`${argv[0] ?? 'a command'} did not end within ${STOP_GRACE_MS / 1000} s of being stopped`));
      }, STOP_GRACE_MS).unref();
    };
    const done = new Promise<ExecEnd>((resolve, reject) => {
      agent.run(nonce, text, {
        started: () => {
          started = true;
          if (stopWanted) stop();
        },
        done: (status, stdout, stderr) => {
          ended = true;
          io.stdout(stdout.toString('utf8'));
          io.stderr(stderr.toString('utf8'));
          if (stopWanted) onStopped?.(stopWanted);
          resolve({ exitCode: status, signal: null });
        },
        failed: (error) => {
          ended = true;
          void whyEnded(error).then(reject);
        },
      });
    });
    return {
      done,
      stop: (why) => {
        if (ended) return;
        stopWanted = why;
        if (started) stop();
      },
    };
  });
}
