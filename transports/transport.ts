/**
 * The Transport interface: how cudamatrix reaches a target. Every transport opens a Session
 * that runs argv arrays (quoted by the session for its own remote shell, never concatenated
 * into a shell string), moves files, and cleans up after itself when disposed.
 */
import type { Duplex } from 'node:stream';
import type { z } from 'zod';
import type { ErrorCode } from '../core/errors.ts';

export type Platform = 'linux' | 'windows';
export type Shell = 'posix' | 'powershell' | 'cmd';

/**
 * One result shape for every transport. A non-zero exit is data, never an exception. Built by
 * supervise() (./supervise.ts), which every transport's exec goes through.
 */
export interface ExecResult {
  command: string[];
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Stopped because the run was cancelled (Ctrl-C). */
  cancelled: boolean;
  /** Output went over the size cap; the process was stopped and the output cut there. */
  truncated: boolean;
  durationMs: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  /**
   * Kills the whole process tree when it runs longer. 0 or Infinity: no limit; above 2^31-1 ms
   * (about 24.8 days, the longest timer Node has) it is clamped to that.
   */
  timeoutMs?: number;
  /** Cap on stdout and on stderr, in characters (default 64 MiB); the first ones are kept. */
  maxOutput?: number;
  /** Aborting stops the command (and its process tree) and returns what it printed so far. */
  signal?: AbortSignal;
  /**
   * Decodes stdout and stderr from their bytes, each whole once the command has ended, where the
   * transport has the bytes (local): for output whose encoding only its bytes tell (wsl.exe's
   * UTF-16LE). Without it, and on other transports, output is read as UTF-8.
   */
  decode?: (bytes: Buffer) => string;
  /**
   * Called with stdout as it comes, where the transport streams it (local, SSH); elsewhere once,
   * at the end. What it is given is also in the result.
   */
  onStdout?: (text: string) => void;
}

/** The Windows machine a session's VM runs on (a WSL 2 distribution's host), or why cudamatrix does not reach it as Windows. */
export type VmHost = { session: Session } | { unreachable: string };

export interface Session extends AsyncDisposable {
  /** What this session reaches, for messages: "local", "ssh gpu-box:22", … */
  readonly description: string;
  /** Targets that share a host key share a concurrency slot on that host. */
  readonly hostKey: string;
  readonly platform: Platform;
  readonly arch: string;
  readonly shell: Shell;
  /** A directory on the target that belongs to this session; removed on dispose. */
  readonly workDir: string;
  exec(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  put(localPath: string, remotePath: string, options?: { executable?: boolean }): Promise<void>;
  get(remotePath: string, localPath: string): Promise<void>;
  /** Joins path segments the way the target's platform does. */
  joinPath(...parts: string[]): string;
  /**
   * Puts a file in the target's persistent per-hash cache, verified by hash, uploading only when
   * it is missing or differs (remote transports). Without it, files go to the work directory.
   */
  installCached?(localPath: string, key: string, name: string): Promise<{ path: string; uploaded: boolean }>;
  /**
   * Runs a command with its stdin and stdout as one byte stream, for a protocol spoken through
   * it: a later hop's Docker engine through `docker system dial-stdio`, as DOCKER_HOST=ssh://
   * does. The stream ends with an error that carries the command's stderr when it fails, and
   * destroying it stops the command (with `stopSignal`, SIGTERM unless said). Sessions that
   * cannot carry bytes both ways leave it out.
   */
  openStream?(argv: string[], options?: StreamOptions): Promise<Duplex>;
  /**
   * A session inside a VM of a Windows machine (a WSL 2 distribution): that machine, for probes
   * that read it from outside (probes/host-vm-memory.ts). Undefined where there is no such VM.
   */
  readonly vmHost?: VmHost;
}

export interface StreamOptions {
  /** The signal that stops the command when its stream is destroyed before it ended. */
  stopSignal?: NodeJS.Signals;
}

export interface ConnectContext {
  /** The target's name, for messages. */
  target: string;
  runId: string;
  /** The session of the previous hop, when this transport is chained behind another. */
  via?: Session;
  signal?: AbortSignal;
  /** The run allows unknown SSH hosts on first use (--accept-new). */
  acceptNewHostKeys?: boolean;
  /**
   * The cudaprobe binary for a platform, for transports that need it before the session exists
   * (docker builds it into the image). Given by the caller: runners do not build probes.
   */
  binaryFor?(platform: Platform, arch: string): Promise<{ path: string; hash: string }>;
  /** Progress of long steps (an image build), a line at a time. */
  onProgress?(message: string): void;
  /** A host key that accept-new wrote to a known_hosts file (told once per key, as it is written). */
  onHostKeyAdded?(added: HostKeyAdded): void;
}

/** A host key written to known_hosts by accept-new (transports/ssh/known-hosts.ts makes them). */
export interface HostKeyAdded {
  /** The known_hosts name: "gpu-box", "[gpu-box]:2222". */
  host: string;
  /** As OpenSSH names it: ED25519, ECDSA, RSA. */
  keyType: string;
  /** SHA256:..., as ssh-keygen -l shows it. */
  fingerprint: string;
  file: string;
}

/** As OpenSSH says it, with the fingerprint too, so that a CI log shows which key was trusted. */
export function hostKeyAddedMessage(added: HostKeyAdded): string {
  return `Permanently added '${added.host}' (${added.keyType}, ${added.fingerprint}) to ${added.file}`;
}

/** An option that names a file on this machine. The hop is as written, before its options are validated. */
export interface LocalFile {
  /** Whether the file may be missing because connecting creates it (known_hosts with accept-new). */
  createdWhen?(hop: Record<string, unknown>, run: { acceptNew: boolean }): boolean;
  /** What to do when it is missing. Default: name an existing file. */
  fix?(file: string, hop: Record<string, unknown>): string;
}

/** Opens a session on a target of one transport kind. */
export type Connect<Options> = (options: Options, context: ConnectContext) => Promise<Session>;

/**
 * One kind of transport, declared once in its own folder (transports/<kind>/kind.ts) and registered
 * under its name in transports/registry.ts. It answers every question the rest of cudamatrix has
 * about the kind (the matrix loader, the planner, doctor, gha matrix, run's secret masking), so
 * that nothing outside transports/ branches on a kind's name. The code that connects (ssh2,
 * dockerode, execa) is loaded only when a target of the kind connects, so that --help, plan and
 * probes list start without it.
 */
export interface TransportKind<Options = unknown> {
  description: string;
  /** The options, validated once, when the matrix is loaded; every method below gets them as parsed. */
  options: z.ZodType<Options>;
  /** Whether the kind can follow another hop in a chain (wsl after ssh), or must come first. */
  chainable: boolean;
  /** The host these options reach ("ssh:gpu-box:22"): targets of one host take turns. Default: the kind's name. */
  hostKey?(options: Options): string;
  /**
   * After another hop, the target lands on a host of this hop's own (a Slurm node, not the login
   * node): the chain's host key is then this hop's, within the hops before.
   */
  landsElsewhere?: boolean;
  /**
   * A hop that stands for many targets (slurm's nodes: gpu[01-16]): one per element, named
   * TARGET@SUFFIX, with these options for the hop. Expanded when the matrix is loaded.
   */
  fanOut?(options: Options): { suffix: string; options: Options }[] | undefined;
  /**
   * A fan-out that only the target's side can list (slurm's nodes: all, asked of sinfo): the
   * lister, given a way to run commands where the hop's run (through the hops before it, or
   * here); undefined when these options need none. Used when a run starts, before its plan.
   */
  fanOutAtRun?(
    options: Options,
  ): ((run: (argv: string[]) => Promise<ExecResult>) => Promise<{ suffix: string; options: Options }[]>) | undefined;
  /**
   * The machine this hop's probes run on when it is another than the one the hop is reached from,
   * in a name every kind that reaches that machine gives ("ssh:ci@gpu-box:22"); undefined: the
   * machine of the hop before (for a first hop, the one cudamatrix runs on). A hop that lands
   * elsewhere names it within the hop before's ("ssh:ci@login:22/slurm:gpu"). gha matrix keeps the
   * targets of one machine out of two jobs.
   */
  machine?(options: Options): string | undefined;
  /**
   * Options that name a file on this machine. The loader resolves a relative one against the
   * matrix file's folder and refuses a missing one at its line, with the fix the entry gives.
   */
  localFiles?: Record<string, LocalFile>;
  /** The environment variables these options name as holding secrets (a key's passphrase): masked in CI logs. */
  secretEnvs?(options: Options): string[];
  /**
   * The option that asks for no GPU, as the matrix writes it ("gpus: none"), when these options
   * ask for none: doctor then expects no driver there, and nhc calls such a node healthy.
   */
  asksForNoGpu?(options: Options): string | undefined;
  /** For doctor: what a session that opened proves about this hop ("host key verified, authenticated"). */
  reached: string;
  /** For doctor: what to do about an error of this code at this hop (TARGET_UNREACHABLE in its words, its own codes). */
  fixes?: Partial<Record<ErrorCode, string>>;
  load(): Promise<Connect<Options>>;
}
