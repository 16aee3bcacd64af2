/**
 * Commands as byte streams (Session.openStream): a child process's stdin and stdout as one
 * Duplex, and the few socket methods Node's HTTP client calls on what an Agent gives it, so that
 * such a stream can carry the Docker engine's API (`docker system dial-stdio`).
 */
import { spawn } from 'node:child_process';
import { Duplex, PassThrough, Writable } from 'node:stream';
import { CudamatrixError } from '../core/errors.ts';
import type { StreamOptions } from './transport.ts';

/** How long a streamed command may take to go after its stop signal before it is killed. */
const STOP_GRACE_MS = 5_000;

/**
 * A streamed command that ended before it said anything. Its parts apart, so that a transport
 * can say what the command said without the command line (the Slurm lifeline's is a script).
 */
export class StreamEndedError extends Error {
  constructor(
    readonly argv: string[],
    readonly code: number | null,
    readonly signal: string | null,
    /** The end of its stderr. */
    readonly stderr: string,
  ) {
    const how = signal ? `was stopped (${signal})` : `exited ${code}`;
    super(`${argv.join(' ')} ${how}${stderr.trim() ? `: ${stderr.trim().slice(-600)}` : ''}`);
  }
}

/** Why a streamed command ended, with the end of its stderr. */
export function streamEnded(argv: string[], code: number | null, signal: string | null, stderr: string): StreamEndedError {
  return new StreamEndedError(argv, code, signal, stderr);
}

/**
 * Gives a Duplex the socket methods the HTTP client and Agent call (timeouts, keep-alive,
 * Nagle, ref counting), as no-ops: the stream underneath has none of its own.
 */
export function socketLike(stream: Duplex): Duplex {
  const socket = stream as Duplex & Record<string, unknown>;
  for (const method of ['setTimeout', 'setNoDelay', 'setKeepAlive', 'ref', 'unref']) {
    if (typeof socket[method] !== 'function') socket[method] = () => stream;
  }
  return stream;
}

/**
 * The writing side of a command's stream: what is written goes to its stdin while that is open.
 * Not the stdin itself: when the command ends (its peer hung up), its stdin closes before the
 * stream was ended, and Duplex.from would take that for a premature close and destroy the
 * stream, with the end of what the command printed still unread.
 */
export function forwardTo(target: Writable): Writable {
  target.on('error', () => undefined); // EPIPE once the command has gone: nothing to deliver to.
  return new Writable({
    write(chunk, _encoding, done) {
      if (!target.writable) return done();
      if (target.write(chunk)) return done();
      const go = () => {
        target.off('drain', go);
        target.off('close', go);
        done();
      };
      target.on('drain', go);
      target.on('close', go);
    },
    final(done) {
      if (target.writable) target.end();
      done();
    },
  });
}

/** Starts a local command; resolves once it runs, with its stdin and stdout as one stream. */
export function streamProcess(argv: string[], options: StreamOptions = {}): Promise<Duplex> {
  const [file, ...args] = argv;
  if (!file) return Promise.reject(new Error('streamProcess needs a command'));
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  // stdout through a PassThrough that counts: whether the command said anything decides below.
  const out = new PassThrough();
  let received = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    received += chunk.length;
    out.write(chunk);
  });
  const stream = socketLike(Duplex.from({ readable: out, writable: forwardTo(child.stdin) }));
  // Ended when the command has exited and its output is all read ('close'): a command that
  // failed before it said anything (no docker CLI there) fails the stream with its stderr, which
  // an end of the output seen first would have hidden behind the reader's "socket hang up". One
  // that spoke and then exited non-zero (dial-stdio, as its peer hung up) ends as the stream does.
  child.once('close', (code, signal) => {
    if (code !== 0 && received === 0 && !stream.destroyed) stream.destroy(streamEnded(argv, code, signal, stderr));
    else out.end();
  });
  // The reader is done with it (the engine connection closed): the command goes too, killed if
  // it outlives its stop signal (salloc only passes TERM on to its command), so none is left.
  stream.on('error', () => undefined); // its user listens too; this keeps a late one from being uncaught
  stream.once('close', () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(options.stopSignal ?? 'SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS).unref();
    child.once('exit', () => clearTimeout(timer));
  });
  return new Promise((resolve, reject) => {
    child.once('spawn', () => resolve(stream));
    child.once('error', (error) =>
      reject(new CudamatrixError('TRANSPORT_FAILED', `cannot start ${file}: ${error.message}`, { cause: error })),
    );
  });
}
