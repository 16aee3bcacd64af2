/**
 * Quoting for Windows hosts reached over SSH (transports/ssh/quote.ts, transports/ssh/session.ts),
 * tested with an adversarial argument set and Windows paths with spaces, for real wherever this
 * machine can run the real thing.
 *
 * What runs here, and what does not:
 *
 * - cmd.exe: Wine's cmd.exe (Debian wine64), not Microsoft's. Commands are started the way
 *   Windows OpenSSH's sshd starts them when its DefaultShell is cmd (its default when the
 *   registry names none): one CreateProcessW with the command line
 *   `"<system32>\cmd.exe" /c "<command>"`, the command copied as it came over SSH
 *   (PowerShell/openssh-portable contrib/win32/win32compat/w32-doexec.c, do_exec_windows: for
 *   cmd no escaping, `"%s %s \"%s\""` of shell, "/c" and the command; pwd.c set_defaultshell:
 *   GetSystemDirectoryW() + "\cmd.exe" when DefaultShell is not set). spawn-cmdline.exe
 *   (test/windows/echo-argv.cpp) makes that CreateProcessW call under Wine, so the command line
 *   is byte for byte cudamatrix's own; `wine prog args` would re-quote it. echo-argv.exe, the
 *   program at the end, reports its argv as the C runtime and as CommandLineToArgvW parsed it
 *   (Wine's implementations of both), in UTF-16 hex. Where Wine's cmd.exe is known to differ
 *   from Microsoft's (a defined %VAR% is expanded even when escaped), the test says so.
 *
 * - PowerShell: none can run here. Debian has no PowerShell; the npm package "pwsh" (0.3.0) ships
 *   no binary and downloads one from GitHub in its postinstall, which fails here (tried
 *   2026-11-30: getaddrinfo ENOTFOUND github.com); Wine 8.0's powershell.exe is a stub
 *   that prints "fixme:powershell:wmain stub" and exits 0 without running anything. So there is
 *   no PowerShell round trip here. What is tested instead: (a) quotePowerShell against
 *   PowerShell's rule for single-quoted strings (its tokenizer, ScanStringLiteral in
 *   PowerShell/PowerShell src/System.Management.Automation/engine/parser/tokenizer.cs: a quote
 *   character followed by another is one literal quote, any other quote character ends the
 *   string; the quote characters are ' U+2018 U+2019 U+201A U+201B, CharTraits.IsSingleQuote),
 *   as a unit test; (b) for real, under Wine: that the cmd hop delivers the PowerShell script
 *   session.ts writes to powershell.exe byte for byte (echo-argv.exe stands where
 *   powershell.exe is found, so it reports what PowerShell would have been given).
 *   Not tested, and not carried: Windows PowerShell 5.1 passes arguments to native programs
 *   the "Legacy" way (PowerShell/PowerShell#1995; NativeArgumentPassingStyle: Legacy uses
 *   ProcessStartInfo.Arguments): a `"` inside an argument is not escaped, so the program loses
 *   it (and may split the argument there), an empty argument is dropped, and one with a space
 *   that ends in `\` escapes its own closing quote and runs into the next.
 *   See the it.todo below.
 *
 * - cudaprobe.exe (the MinGW build) runs under Wine's cmd.exe with the argv runProbe hands the
 *   SSH session, quoted by quoteArgv(argv, 'cmd'), from a folder with spaces. On a Windows host
 *   session.ts wraps that argv in a PowerShell script (on cmd hosts too: cmd starts
 *   powershell); that PowerShell hop is the part this machine cannot run.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProbe } from '../../probes/build.ts';
import type { DeployedProbe } from '../../probes/deploy.ts';
import { parseProbeOutput, type SysinfoRecord } from '../../probes/protocol.ts';
import { runProbe } from '../../probes/run-probe.ts';
import { CMD_MAX_LINE, quoteArgv, quoteCmd, quotePowerShell } from '../../transports/ssh/quote.ts';
import { SshSession } from '../../transports/ssh/session.ts';
import type { ExecOptions, Shell } from '../../transports/transport.ts';
import { hasCommand, integrationAvailable, tempDir, testCacheDir, WINE } from '../helpers.ts';

const MINGW = 'x86_64-w64-mingw32-g++-posix';

/** Arguments built to break Windows quoting. Each one cmd.exe can carry (no line break, no NUL). */
const adversarial = [
  'plain',
  'two words',
  '',
  ' ',
  '  leading and trailing  ',
  "single'quote",
  'double"quote',
  `both'"kinds`,
  '"',
  '""',
  '"quoted whole"',
  'back\\slash',
  'trailing backslash\\',
  'trailing backslash and space \\',
  '\\',
  '\\\\',
  'backslash before quote\\"',
  'two backslashes before quote\\\\"',
  '\\"already escaped\\"',
  '%CUDAMATRIX_SURELY_UNDEFINED%',
  '%',
  '100%',
  '%%',
  'a%b%c',
  '%1 %* %~dp0',
  '!OS!',
  '!CUDAMATRIX_SURELY_UNDEFINED!',
  '^',
  '^^caret',
  '&',
  'a && b || c',
  'pipe|line',
  'redir>out <in 2>&1',
  '(paren)',
  ')',
  '$env:PATH',
  '$HOME',
  '${PATH}',
  '$(Get-Date)',
  '@(1,2)',
  '`backtick`',
  '`"',
  'semi;colon',
  'comma,list',
  '#hash',
  '-flag',
  '--%',
  '/c',
  'key=value with spaces',
  'tab\there',
  '\t',
  'ünïcødé ✓ 漢字',
  'emoji 😀',
  'typographic ‘single’ “double” „low“ ‚low‛',
  '’',
  'it’s',
  'C:\\Program Files\\cudamatrix\\cudaprobe.exe',
  'C:\\Program Files (x86)\\NVIDIA Corporation\\',
  'C:\\Users\\Jane Doe\\AppData\\Local\\Temp\\cudamatrix-x\\',
  '\\\\wsl$\\Ubuntu\\home',
  '\\\\?\\C:\\Program Files\\x',
  'x'.repeat(2000),
  `long, quoted: ${'"a b" \\" '.repeat(60)}\\`,
];

/** Test names: each argument as JSON, cut short. */
function labelled(args: string[]): [string, string][] {
  return args.map((arg) => {
    const json = JSON.stringify(arg);
    return [json.length > 60 ? `${json.slice(0, 50)}… (${arg.length} characters)` : json, arg];
  });
}

/** What cmd.exe cannot carry at all: quoteCmd refuses them (tested below). */
const cmdCannotCarry = ['new\nline', 'carriage\rreturn', 'crlf\r\n', 'nul\0byte'];

/**
 * Reads the single-quoted string literal that starts at `at` by PowerShell's rule (see the
 * file comment): a quote character followed by another quote character is the second one,
 * literally; any other quote character ends the string. Nothing else is special inside.
 */
const SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b";
function readSingleQuoted(text: string, at: number): { value: string; end: number } {
  if (!SINGLE_QUOTES.includes(text[at] ?? ''))
    throw new Error(`no single-quoted string at ${at}: ${JSON.stringify(text.slice(at, at + 20))}`);
  let value = '';
  for (let i = at + 1; i < text.length; i++) {
    const char = text[i]!;
    if (!SINGLE_QUOTES.includes(char)) {
      value += char;
      continue;
    }
    if (i + 1 < text.length && SINGLE_QUOTES.includes(text[i + 1]!)) {
      value += text[++i];
      continue;
    }
    return { value, end: i + 1 };
  }
  throw new Error('the string is not terminated');
}

/** The words of `& 'a' 'b' ...` (what quoteArgv(argv, 'powershell') writes), read back. */
function readCallOperator(text: string): string[] {
  if (!text.startsWith('& ')) throw new Error(`not a call: ${text.slice(0, 20)}`);
  const words: string[] = [];
  let at = 2;
  for (;;) {
    const { value, end } = readSingleQuoted(text, at);
    words.push(value);
    if (end === text.length) return words;
    if (text[end] !== ' ') throw new Error(`text after a word: ${JSON.stringify(text.slice(end, end + 20))}`);
    at = end + 1;
  }
}

describe('PowerShell quoting, by the tokenizer rule (no PowerShell can run here)', () => {
  it.each(labelled([...adversarial, ...cmdCannotCarry, "'", "''", '‘’‚‛', "a'", "'a", "’'"]))(
    'reads back %s exactly, ending at its closing quote',
    (_, arg) => {
      const quoted = quotePowerShell(arg);
      expect(readSingleQuoted(quoted, 0)).toEqual({ value: arg, end: quoted.length });
    },
  );

  it('writes a call whose words read back as the argv, program path with spaces first', () => {
    const argv = ['C:\\Program Files\\cudamatrix\\cudaprobe.exe', ...adversarial, ...cmdCannotCarry];
    expect(readCallOperator(quoteArgv(argv, 'powershell'))).toEqual(argv);
  });

  // A plain word would be parsed: $ expands, a backtick escapes, ; ends the statement, and
  // ‘ or ’ would start or end a string. Single-quoted, none of that happens.
  it('quotes every argument, even ones that look harmless', () => {
    expect(quoteArgv(['prog', 'plain', '-flag', ''], 'powershell')).toBe("& 'prog' 'plain' '-flag' ''");
  });

  it.todo(
    'arguments with ", empty arguments and arguments with a space ending in \\ reach a native program intact under Windows PowerShell 5.1 (Legacy native argument passing, PowerShell/PowerShell#1995): needs a real Windows host',
  );
});

describe('cmd.exe quoting, refusals (unit)', () => {
  it.each(labelled(cmdCannotCarry))('refuses %s: cmd.exe cannot pass a line break or NUL', (_, arg) => {
    expect(() => quoteCmd(arg)).toThrow(/cmd.exe cannot pass an argument with a line break or NUL/);
    expect(() => quoteArgv(['prog', arg], 'cmd')).toThrow(/cmd.exe cannot pass/);
  });

  it(`refuses a command line longer than cmd.exe runs (${CMD_MAX_LINE} characters with OpenSSH's two quotes)`, () => {
    const fits = (length: number) => quoteArgv(['prog', 'a'.repeat(length)], 'cmd');
    // ^"prog^" ^"aaa…^": 8 + 1 + 4 characters around the a's, plus OpenSSH's two quotes.
    expect(fits(CMD_MAX_LINE - 15).length + 2).toBe(CMD_MAX_LINE);
    expect(() => fits(CMD_MAX_LINE - 14)).toThrow(/cmd.exe runs at most 8191/);
  });
});

/** A Unix path as Wine's Z: drive names it. */
function winPath(unixPath: string): string {
  return `Z:${unixPath.replace(/\//g, '\\')}`;
}

interface EchoRecord {
  crt: string[];
  shell32: string[];
  cmdline: string;
  cwd: string;
}

function readRecord(file: string): EchoRecord | undefined {
  if (!existsSync(file)) return undefined;
  const raw = JSON.parse(readFileSync(file, 'utf8')) as { crt: string[]; shell32: string[]; cmdline: string; cwd: string };
  const text = (hex: string) => Buffer.from(hex, 'hex').toString('utf16le');
  return { crt: raw.crt.map(text), shell32: raw.shell32.map(text), cmdline: text(raw.cmdline), cwd: text(raw.cwd) };
}

/** A channel of an ssh2 Client, as much of it as SshSession uses on Windows hosts. */
type Channel = EventEmitter & { stderr: EventEmitter; end(data?: string): void; close(): void };

function newChannel(stop: () => void = () => {}, write: (data?: string) => void = () => {}): Channel {
  return Object.assign(new EventEmitter(), { stderr: new EventEmitter(), end: write, close: stop });
}

type ExecCallback = (err: Error | undefined, channel: Channel) => void;

/**
 * Stands in for an ssh2 Client connected to Windows OpenSSH with DefaultShell cmd: each exec
 * request runs as `"c:\windows\system32\cmd.exe" /c "<command>"` (the path lower-cased, as
 * set_defaultshell stores it), through spawn-cmdline.exe under Wine, in the user's home folder.
 * Not a server: no authentication, no SFTP; the command string is cudamatrix's, unchanged.
 */
class WineCmdHost extends EventEmitter {
  readonly commands: string[] = [];
  /** Where echo-argv.exe writes its record for the next command, and its exit status. */
  record?: string;
  exitStatus?: number;
  private count = 0;

  constructor(
    private readonly dir: string,
    private readonly home: string,
    private readonly spawner: string,
    private readonly wineEnv: NodeJS.ProcessEnv,
  ) {
    super();
  }

  private launch(command: string): ChildProcess {
    this.commands.push(command);
    const file = path.join(this.dir, `cmdline-${++this.count}.txt`);
    writeFileSync(file, `"c:\\windows\\system32\\cmd.exe" /c "${command}"`);
    const env = { ...this.wineEnv, ECHO_ARGV_OUT: this.record ? winPath(this.record) : '', ECHO_ARGV_EXIT: String(this.exitStatus ?? 0) };
    return spawn(WINE, [this.spawner, winPath(file)], { cwd: this.home, env, stdio: ['pipe', 'pipe', 'pipe'] });
  }

  /** Runs one command line to its end, its output collected; `started` gets the process. */
  private runOnce(command: string, stdin: string | undefined, started: (child: ChildProcess) => void): Promise<Ended> {
    const child = this.launch(command);
    started(child);
    child.stdin!.end(stdin);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
    return new Promise((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) })),
    );
  }

  /**
   * runOnce, started once more when echo argv.exe was to write a record, wrote none, and the
   * command failed: about once in ten loaded runs of test/windows/ (CI 2026-12-02, and reproduced
   * here) Wine ended a command with exit 1 before the program ran. That is Wine's; a quoting
   * failure fails again. The test log says when it happened.
   */
  private async runChecked(command: string, stdin: string | undefined, started: (child: ChildProcess) => void): Promise<Ended> {
    const first = await this.runOnce(command, stdin, started);
    if (!this.record || existsSync(this.record) || first.code === 0) return first;
    console.warn(`windows-quoting: a command ended with exit ${first.code ?? first.signal} and no record; started once more`);
    return this.runOnce(command, stdin, started);
  }

  /** ssh2's Client.exec, as SshSession calls it: the command starts when the session ends its stdin. */
  exec(command: string, callback: ExecCallback): void {
    let current: ChildProcess | undefined;
    const channel = newChannel(
      () => current?.kill('SIGKILL'),
      (data) =>
        void this.runChecked(command, data, (child) => (current = child)).then((ended) => {
          if (ended.stdout.length) channel.emit('data', ended.stdout);
          if (ended.stderr.length) channel.stderr.emit('data', ended.stderr);
          channel.emit('close', ended.code, ended.signal ?? undefined);
        }),
    );
    callback(undefined, channel);
  }

  /** Runs one command line and collects what it printed. */
  async run(command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const result = await this.runChecked(command, undefined, () => {});
    return { code: result.code, stdout: result.stdout.toString('utf8'), stderr: result.stderr.toString('utf8') };
  }
}

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
}

/** Keeps every command it is asked to run, and answers each with exit 0 and no output. */
class CapturingClient extends EventEmitter {
  readonly commands: string[] = [];
  exec(command: string, callback: ExecCallback): void {
    this.commands.push(command);
    const channel = newChannel();
    callback(undefined, channel);
    setImmediate(() => channel.emit('close', 0));
  }
}

type SessionConstructor = new (
  client: EventEmitter,
  description: string,
  platform: 'windows',
  arch: string,
  shell: Shell,
  workDir: string,
  onDispose: () => Promise<void>,
) => SshSession;

/**
 * An SshSession on a Windows host. SshSession.open would first run its PowerShell setup
 * scripts (architecture, run directory, guardian), which need a PowerShell; its constructor is
 * private to TypeScript only. Everything exec does from here is the product's own code.
 */
function windowsSession(client: EventEmitter, shell: Shell, workDir: string): SshSession {
  return new (SshSession as unknown as SessionConstructor)(
    client,
    `ssh wine-${shell}-host`,
    'windows',
    'x86_64',
    shell,
    workDir,
    async () => {},
  );
}

/** The command session.ts sends to a host whose shell is PowerShell, for this argv. */
async function powershellCommandFor(argv: string[], options: ExecOptions): Promise<string> {
  const client = new CapturingClient();
  await windowsSession(client, 'powershell', options.cwd!).exec(argv, options);
  return client.commands[0]!;
}

const sameNonce = (command: string) => command.replace(/cm-begin-[0-9a-f]{16}/g, 'cm-begin-NONCE');

describe('cmd.exe and cudaprobe.exe under Wine, started the way Windows OpenSSH starts commands', () => {
  const ready = integrationAvailable(
    'MinGW-w64 and Wine',
    hasCommand(MINGW, ['--version']) && hasCommand(WINE, ['--version']),
    'apt-get install g++-mingw-w64-x86-64-posix wine64',
  );
  let root: string;
  let host: WineCmdHost;
  let wineEnv: NodeJS.ProcessEnv | undefined;
  const wineserver = path.join(path.dirname(WINE), 'wineserver');
  // Ends this prefix's wineserver and what runs in it: only this file's own processes.
  afterAll(() => {
    if (wineEnv) spawnSync(wineserver, ['-k'], { env: wineEnv, stdio: 'ignore', timeout: 60_000 });
  });
  let echoExe: string;
  let recordCount = 0;
  /** A fresh file for echo-argv.exe's next record. */
  const nextRecord = () => path.join(root, `record-${++recordCount}.json`);

  beforeAll(async () => {
    if (!ready) return;
    // This file's own prefix (another test's Wine runs must not share its state), Windows 10.
    const prefix = path.join(testCacheDir, 'wineprefix-quoting');
    const env = { ...process.env, WINEDEBUG: '-all', WINEPREFIX: prefix };
    wineEnv = env;
    const wine = (args: string[]) => {
      const result = spawnSync(WINE, args, { env, stdio: 'ignore', timeout: 240_000 });
      if (result.status !== 0) throw new Error(`wine64 ${args.join(' ')} exited with ${result.status ?? result.signal}`);
    };
    const initialised = path.join(prefix, '.cudamatrix-win10');
    if (!existsSync(initialised)) {
      wine(['wineboot', '-i']);
      wine(['winecfg', '/v', 'win10']);
      writeFileSync(initialised, '');
    }
    // One wineserver for this file, kept until the end, and the Windows services started now
    // with no output of ours. Started by a command instead, the services hold its stdout open
    // after it exits, until the wineserver goes idle (seen: 15-20 s per cudaprobe run).
    for (const args of [['-k'], ['-w'], ['-p']]) spawnSync(wineserver, args, { env, stdio: 'ignore', timeout: 60_000 });
    wine(['wineboot']);
    const programs = buildEchoArgv();
    root = tempDir('cm-winquote-');
    // The program at the end of every command line sits in a folder with spaces.
    const programDir = path.join(root, 'Program Files', 'cudamatrix test');
    mkdirSync(programDir, { recursive: true });
    echoExe = path.join(programDir, 'echo argv.exe');
    copyFileSync(programs.echo, echoExe);
    // OpenSSH starts commands in the user's home. cmd.exe looks for a program in the current
    // folder before PATH: the PowerShell that session.ts starts from cmd is echo-argv.exe here.
    const home = path.join(root, 'Users', 'Jane Doe');
    mkdirSync(home, { recursive: true });
    copyFileSync(programs.echo, path.join(home, 'powershell.exe'));
    host = new WineCmdHost(root, home, winPath(programs.spawn), wineEnv);
  }, 600_000);

  /** Runs `cmd.exe /c <quoteArgv([echo argv.exe, ...args], 'cmd')>` and returns echo-argv's record. */
  async function throughCmd(args: string[]) {
    host.record = nextRecord();
    const result = await host.run(quoteArgv([winPath(echoExe), ...args], 'cmd'));
    const record = readRecord(host.record);
    if (!record)
      throw new Error(
        `echo argv.exe wrote no record: exit ${result.code}, stdout ${JSON.stringify(result.stdout)}, stderr ${JSON.stringify(result.stderr)}`,
      );
    return { ...result, record };
  }

  it.runIf(ready)(
    'carries every adversarial argument through cmd.exe byte for byte, as the C runtime and CommandLineToArgvW read it',
    async () => {
      const result = await throughCmd(adversarial);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.record!.crt).toEqual([winPath(echoExe), ...adversarial]);
      expect(result.record!.shell32).toEqual([winPath(echoExe), ...adversarial]);
    },
  );

  it.runIf(ready)('carries them one at a time as well, and in reverse order (no argument leans on its neighbour)', async () => {
    const result = await throughCmd([...adversarial].reverse());
    expect(result.record!.crt.slice(1)).toEqual([...adversarial].reverse());
    for (const arg of [
      '',
      '"',
      '\\',
      'trailing backslash\\',
      'C:\\Users\\Jane Doe\\AppData\\Local\\Temp\\cudamatrix-x\\',
      '%CUDAMATRIX_SURELY_UNDEFINED%',
      '^',
    ]) {
      const one = await throughCmd([arg]);
      expect(one.record!.crt.slice(1), JSON.stringify(arg)).toEqual([arg]);
      expect(one.record!.shell32.slice(1), JSON.stringify(arg)).toEqual([arg]);
    }
  });

  it.runIf(ready)("passes the program's exit status back through cmd.exe /c", async () => {
    host.exitStatus = 7;
    try {
      expect((await throughCmd(['x'])).code).toBe(7);
    } finally {
      host.exitStatus = undefined;
    }
  });

  // Wine's cmd.exe removes carets before it expands %VAR%, so ^%OS^% still expands there. By
  // the parse phases documented for Microsoft's cmd.exe (percent expansion first, on the raw
  // line, where the name read is "OS^", which is not defined; then carets), it does not
  // (stackoverflow.com/questions/4094699, "How does the Windows Command Interpreter (CMD.EXE)
  // parse scripts?"). Not verified on Windows. The round trip above uses undefined names; when
  // this starts passing %OS% through, move it there.
  it.runIf(ready)("shows where Wine's cmd.exe differs: a defined %VAR% is expanded even escaped", async () => {
    expect(quoteCmd('%OS%')).toBe('^"^%OS^%^"');
    expect((await throughCmd(['%OS%'])).record!.crt[1]).toBe('Windows_NT');
  });

  it.runIf(ready)("runs a line of cmd.exe's full length, and does not run a longer one at all (why quoteArgv refuses it)", async () => {
    const prefixLength = quoteArgv([winPath(echoExe), ''], 'cmd').length;
    const longest = 'a'.repeat(CMD_MAX_LINE - 2 - prefixLength);
    const fits = await throughCmd([longest]);
    expect(quoteArgv([winPath(echoExe), longest], 'cmd').length + 2).toBe(CMD_MAX_LINE);
    expect(fits.record!.crt.slice(1)).toEqual([longest]);
    // Past it (quoted by hand: quoteArgv refuses), Wine's cmd.exe started nothing and said
    // nothing, and exited 0; Microsoft's says "The command line is too long" (exit 1).
    host.record = nextRecord();
    const over = await host.run([winPath(echoExe), 'a'.repeat(CMD_MAX_LINE)].map(quoteCmd).join(' '));
    expect(readRecord(host.record)).toBeUndefined();
    expect(over.code).toBe(0);
  });

  const cwd = 'C:\\Users\\Jane Doe\\AppData\\Local\\Temp\\cudamatrix-x\\';
  const env = { CUDAMATRIX_QUOTING: `it's ‘typographic’ “double” "plain" %CUDAMATRIX_SURELY_UNDEFINED% !OS! $env:PATH \`n ; & | < > ^ \\` };

  it.runIf(ready)(
    'hands PowerShell, through cmd.exe, exactly the script session.ts sends a PowerShell host (cwd with spaces and a trailing backslash, adversarial env)',
    async () => {
      const argv = [
        'C:\\Program Files\\cudamatrix\\cudaprobe.exe',
        'run',
        'sync-latency',
        ...adversarial.filter((arg) => arg.length < 500),
      ];
      const options = { cwd, env };
      const session = windowsSession(host, 'cmd', cwd);
      host.record = nextRecord();
      host.exitStatus = 5;
      const result = await session.exec(argv, options).finally(() => (host.exitStatus = undefined));
      // The command went over "SSH" as the session wrote it, and came back with its exit status.
      expect(host.commands.at(-1)!.length + 2).toBeLessThanOrEqual(CMD_MAX_LINE);
      expect(result.exitCode, `stdout ${JSON.stringify(result.stdout)}, stderr ${JSON.stringify(result.stderr)}`).toBe(5);
      const record = readRecord(host.record)!;
      const expected = ['-NoProfile', '-NonInteractive', '-Command', sameNonce(await powershellCommandFor(argv, options))];
      expect(record.crt.slice(1).map(sameNonce)).toEqual(expected);
      expect(record.shell32.slice(1).map(sameNonce)).toEqual(expected);
      // What that script says, read by PowerShell's quoting rule (not run: see the file comment).
      const script = record.crt.at(-1)!;
      expect(script).toContain(`; Set-Location -LiteralPath ${quotePowerShell(cwd)}; `);
      const setEnv = `; $env:CUDAMATRIX_QUOTING = ${quotePowerShell(env.CUDAMATRIX_QUOTING)}; `;
      expect(script).toContain(setEnv);
      expect(script.endsWith('; exit $LASTEXITCODE')).toBe(true);
      const call = script.slice(script.indexOf(setEnv) + setEnv.length, -'; exit $LASTEXITCODE'.length);
      expect(readCallOperator(call)).toEqual(argv);
    },
  );

  it.runIf(ready)('refuses, before sending anything, an argument a cmd host cannot carry', async () => {
    const client = new CapturingClient();
    const session = windowsSession(client, 'cmd', cwd);
    await expect(Promise.resolve().then(() => session.exec(['prog', 'two\nlines'], { cwd }))).rejects.toThrow(
      /cmd.exe cannot pass an argument with a line break/,
    );
    await expect(Promise.resolve().then(() => session.exec(['prog', 'x'.repeat(CMD_MAX_LINE)], { cwd }))).rejects.toThrow(
      /cmd.exe runs at most 8191/,
    );
    expect(client.commands).toEqual([]);
  });

  describe('cudaprobe.exe', () => {
    let deployed: DeployedProbe;

    beforeAll(async () => {
      if (!ready) return;
      const binary = await buildProbe({ platform: 'windows', arch: 'x86_64', cacheDir: testCacheDir });
      const dir = path.join(root, 'Program Files', 'cudamatrix');
      mkdirSync(dir, { recursive: true });
      copyFileSync(binary.path, path.join(dir, 'cudaprobe.exe'));
      deployed = { binary, remotePath: winPath(path.join(dir, 'cudaprobe.exe')), uploaded: false };
    }, 600_000);

    it.runIf(ready)(
      'takes its no-driver path (exit 3, os_family windows) from a folder with spaces, with the argv runProbe gives the SSH session',
      async () => {
        // The argv as runProbe builds it and gives SshSession.exec; over the cmd host, the cmd hop
        // hands PowerShell a script that calls exactly it.
        host.record = nextRecord();
        const run = await runProbe(windowsSession(host, 'cmd', cwd), deployed, 'sysinfo');
        const argv = run.exec.command;
        expect(argv).toEqual([deployed.remotePath, 'run', 'sysinfo', '--device', '0']);
        expect(readRecord(host.record)!.crt.at(-1)).toContain(`; ${quoteArgv(argv, 'powershell')}; exit $LASTEXITCODE`);
        // That argv through cmd.exe to cudaprobe.exe itself.
        const result = await host.run(quoteArgv(argv, 'cmd'));
        expect(result.code, result.stderr).toBe(3);
        const { records, problems } = parseProbeOutput(result.stdout);
        expect(problems).toEqual([]);
        const sysinfo = Object.fromEntries(
          records.filter((record): record is SysinfoRecord => record.type === 'sysinfo').map((record) => [record.name, record.value]),
        );
        expect(sysinfo.os_family).toBe('windows');
        expect(sysinfo.driver_found).toBe(false);
        expect(records.find((record) => record.type === 'skip')).toMatchObject({
          probe: 'sysinfo',
          reason: expect.stringContaining('no NVIDIA driver found'),
        });
      },
    );

    // cudaprobe reads its arguments through main(char**), in the ANSI code page: the values are
    // ASCII here (non-ASCII ones reach echo-argv.exe above, which reads them as UTF-16).
    it
      .runIf(ready)
      .each(
        labelled([
          '',
          'two words "quoted" \\"escaped\\" trailing\\',
          '%CUDAMATRIX_SURELY_UNDEFINED% !OS! ^caret & | < > ( ) 100% a%b%c',
          "$env:PATH $(Get-Date) `tick` ; , # 'single' -flag --%",
          'C:\\Program Files\\cudamatrix\\',
          '\\\\wsl$\\Ubuntu\\home',
          '\ttab\t and  spaces ',
          `${'y'.repeat(1500)}"\\\\\\`,
        ]),
      )('gets --param iterations=%s intact (it says so when refusing it: exit 2)', async (_, value) => {
      const client = new CapturingClient();
      const run = await runProbe(windowsSession(client, 'cmd', cwd), deployed, 'sync-latency', { params: { iterations: value } });
      const argv = run.exec.command;
      expect(argv.slice(-2)).toEqual(['--param', `iterations=${value}`]);
      const result = await host.run(quoteArgv(argv, 'cmd'));
      expect(result.code, result.stderr).toBe(2);
      const error = parseProbeOutput(result.stdout).records.find((record) => record.type === 'error');
      expect(error).toMatchObject({ code: 'USAGE', message: `parameter iterations=${value} is not a number` });
    });
  });
});

/**
 * Compiles test/windows/echo-argv.cpp twice (echo-argv.exe, spawn-cmdline.exe) with MinGW-w64,
 * cached in the test cache by a hash of the source and flags.
 */
function buildEchoArgv(): { echo: string; spawn: string } {
  const source = path.join(import.meta.dirname, 'echo-argv.cpp');
  const flags = ['-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror', '-municode', '-static'];
  const hash = createHash('sha256').update(readFileSync(source)).update(flags.join(' ')).digest('hex').slice(0, 16);
  const dir = path.join(testCacheDir, `echo-argv-${hash}`);
  const out = { echo: path.join(dir, 'echo-argv.exe'), spawn: path.join(dir, 'spawn-cmdline.exe') };
  if (existsSync(out.echo) && existsSync(out.spawn)) return out;
  const building = `${dir}.${process.pid}.tmp`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  for (const [exe, extra] of [
    ['echo-argv.exe', []],
    ['spawn-cmdline.exe', ['-DSPAWN_CMDLINE']],
  ] as const) {
    const result = spawnSync(MINGW, [...flags, ...extra, '-o', path.join(building, exe), source, '-lshell32'], {
      encoding: 'utf8',
      timeout: 300_000,
    });
    if (result.status !== 0) throw new Error(`${MINGW} failed on ${source}: ${result.stderr}`);
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(building, dir);
  return out;
}
