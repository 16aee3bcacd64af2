/**
 * The Windows side of an SSH session (Win32-OpenSSH; PowerShell or cmd as the shell): every
 * step is a PowerShell script, each on a channel of its own; a guardian channel removes the run
 * directory when it closes; a stopped command's tree is ended with taskkill; files go by SFTP.
 */
import type { Client, ClientChannel } from 'ssh2';
import { normaliseArch } from '../../core/arch.ts';
import { CudamatrixError } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import type { CacheHost } from '../remote-cache.ts';
import type { ExecOptions, Shell } from '../transport.ts';
import { afterMarker, type HelperOutput, LAST_WORDS, newNonce, run, startHelper } from './channel.ts';
import { quoteArgv, quotePowerShell } from './quote.ts';

/**
 * What every PowerShell script begins with. `$null;`: OpenSSH for Windows passes a command that
 * begins with a quote to PowerShell unquoted, and it is split again (misc.c); this one begins with
 * a statement. Then UTF-8 output (without a byte order mark), for PowerShell's own output and for
 * its reading of native programs' (cudaprobe writes UTF-8): by default both are the OEM code page,
 * in which a profile folder such as C:\Users\Jürgen comes back garbled. Where the console cannot
 * be set (no console), the script goes on in the default.
 */
export const POWERSHELL_PRELUDE = '$null; try { [Console]::OutputEncoding = New-Object System.Text.UTF8Encoding $false } catch { }; ';

/** taskkill's exit status when no process has that PID (the tree has ended already). */
const TASKKILL_NOT_FOUND = 128;

/** A PowerShell script as a command line for the remote shell (PowerShell itself, or cmd). */
export function powershell(shell: Shell, body: string): string {
  const script = POWERSHELL_PRELUDE + body;
  if (shell === 'powershell') return script;
  // From cmd, start PowerShell with the script as one -Command argument.
  return quoteArgv(['powershell', '-NoProfile', '-NonInteractive', '-Command', script], 'cmd');
}

/**
 * Which shell runs our commands, in one round trip: sh expands $0 and leaves %OS% alone; cmd
 * expands %OS% only; PowerShell expands neither but knows $PSVersionTable. Only what follows the
 * marker counts: a login script may have printed anything (even "Windows_NT") before it.
 */
export async function detectShell(client: Client, label: string, timeoutMs: number): Promise<Shell> {
  const nonce = newNonce();
  const result = await run(client, `echo cm-shell-${nonce} %OS% $PSVersionTable`, { timeoutMs, what: `detecting the shell of ${label}` });
  // No marker (a shell that refused the line, e.g. csh on the undefined variable): as before,
  // POSIX is tried, and the helper's start says what went wrong.
  const out = afterMarker(result.stdout, `cm-shell-${nonce}`) ?? '';
  if (out.includes('Windows_NT')) return 'cmd';
  if (/System\.Management\.Automation|PSVersion/.test(out)) return 'powershell';
  return 'posix';
}

/**
 * Reads the processor architecture and makes the run directory (%TEMP%\cudamatrix-GUID), then
 * starts its guardian: a channel whose end (at dispose, or when the connection drops) removes it.
 */
export async function openWindowsHost(
  client: Client,
  label: string,
  shell: Shell,
  setupTimeoutMs: number,
): Promise<{ arch: string; workDir: string; guardian: { channel: ClientChannel; output: HelperOutput } }> {
  const setup = { timeoutMs: setupTimeoutMs };
  const archNonce = newNonce();
  const archResult = await run(client, powershell(shell, `'cm-arch-${archNonce}'; $env:PROCESSOR_ARCHITECTURE`), {
    ...setup,
    what: 'reading the processor architecture',
  });
  // PROCESSOR_ARCHITECTURE: AMD64 or ARM64 (x86 in a 32-bit PowerShell, which runs x64 programs too).
  const arch = normaliseArch(afterMarker(archResult.stdout, `cm-arch-${archNonce}`) ?? '') === 'aarch64' ? 'aarch64' : 'x86_64';
  const dirNonce = newNonce();
  const dirResult = await run(
    client,
    powershell(
      shell,
      `$d = Join-Path $env:TEMP ('cudamatrix-' + [guid]::NewGuid()); New-Item -ItemType Directory -Path $d | Out-Null; 'cm-dir-${dirNonce}'; $d`,
    ),
    { ...setup, what: 'making the run directory' },
  );
  const workDir = (afterMarker(dirResult.stdout, `cm-dir-${dirNonce}`) ?? '').trim().split(/\r?\n/)[0] ?? '';
  if (dirResult.code !== 0 || !/^[A-Za-z]:\\/.test(workDir))
    throw new CudamatrixError(
      'TRANSPORT_FAILED',
      `could not make a run directory on ${label}: ${oneLine(dirResult.stderr, LAST_WORDS) || oneLine(dirResult.stdout, LAST_WORDS) || `exit status ${dirResult.code}`}`,
    );
  const readyNonce = newNonce();
  const guardian = await startHelper(
    client,
    powershell(
      shell,
      `'cm-ready-${readyNonce}'; [Console]::In.ReadToEnd() | Out-Null; Remove-Item -Recurse -Force -LiteralPath ${quotePowerShell(workDir)}`,
    ),
    { marker: `cm-ready-${readyNonce}`, timeoutMs: setupTimeoutMs },
  );
  if (!guardian.ok) {
    // The directory exists but nothing watches it: remove it now, or say where it is.
    const rm = await run(client, powershell(shell, `Remove-Item -Recurse -Force -LiteralPath ${quotePowerShell(workDir)}`), setup).catch(
      () => undefined,
    );
    throw new CudamatrixError(
      'TRANSPORT_FAILED',
      `could not start the session's guardian on ${label}: ${guardian.why}${rm?.code === 0 ? '' : `; ${workDir} may be left there`}`,
    );
  }
  return { arch, workDir, guardian };
}

/**
 * The command line for a command's own channel: marker lines on stdout and stderr first (see
 * MarkerStrip), the one on stdout with the PID of the PowerShell that runs it (for endWindowsTree).
 */
export function windowsCommandLine(shell: Shell, argv: string[], options: ExecOptions, nonce: string, workDir: string): string {
  const env = Object.entries(options.env ?? {});
  const script = [
    `[Console]::Out.WriteLine('cm-begin-${nonce} ' + $PID)`,
    `[Console]::Error.WriteLine('cm-begin-${nonce}')`,
    `Set-Location -LiteralPath ${quotePowerShell(options.cwd ?? workDir)}`,
    ...env.map(([k, value]) => `$env:${k} = ${quotePowerShell(value)}`),
    quoteArgv(argv, 'powershell'),
    'exit $LASTEXITCODE',
  ].join('; ');
  return powershell(shell, script);
}

/**
 * Ends a Windows process tree, from the PowerShell that runs a command down, on a channel of its
 * own: `taskkill /F /T /PID` (cmd and PowerShell both run it as it is). When it fails, the
 * command's stderr says so: its processes may still hold the GPU and its folder. True when the
 * tree has ended.
 */
export async function endWindowsTree(client: Client, description: string, pid: number, stderr: (text: string) => void): Promise<boolean> {
  const outcome = await run(client, `taskkill /F /T /PID ${pid}`, { timeoutMs: 15_000, what: `taskkill /F /T /PID ${pid}` }).catch(
    (e: Error) => e,
  );
  if (!(outcome instanceof Error) && (outcome.code === 0 || outcome.code === TASKKILL_NOT_FOUND)) return true;
  const why =
    outcome instanceof Error
      ? outcome.message
      : `exit status ${outcome.code}: ${oneLine(outcome.stdout + outcome.stderr, LAST_WORDS) || 'no output'}`;
  stderr(
    `\ncudamatrix: taskkill /F /T /PID ${pid} on ${description} failed (${why}); the command's processes may still be running there: end them with Task Manager or taskkill\n`,
  );
  return false;
}

/** The probe cache's steps in PowerShell (%LOCALAPPDATA%\cudamatrix\deployed\KEY), each on a channel of its own. */
export function windowsCache(client: Client, shell: Shell): Pick<CacheHost, 'lookUp' | 'moveAndHash'> {
  return {
    async lookUp(key, name) {
      const nonce = newNonce();
      const result = await run(
        client,
        powershell(
          shell,
          `$d = Join-Path $env:LOCALAPPDATA 'cudamatrix\\deployed\\${key}'; New-Item -ItemType Directory -Force -Path $d | Out-Null; 'cm-cache-${nonce}'; $d; $f = Join-Path $d ${quotePowerShell(name)}; if (Test-Path $f) { (Get-FileHash -Algorithm SHA256 -LiteralPath $f).Hash }`,
        ),
      );
      const [dir, sha] = (afterMarker(result.stdout, `cm-cache-${nonce}`) ?? '').trim().split(/\r?\n/);
      return { dir, sha };
    },
    async moveAndHash(from, to) {
      const nonce = newNonce();
      const mv = await run(
        client,
        powershell(
          shell,
          `Move-Item -Force -LiteralPath ${quotePowerShell(from)} -Destination ${quotePowerShell(to)}; 'cm-hash-${nonce}'; (Get-FileHash -Algorithm SHA256 -LiteralPath ${quotePowerShell(to)}).Hash`,
        ),
      );
      const sha = mv.code === 0 ? ((afterMarker(mv.stdout, `cm-hash-${nonce}`) ?? '').trim().split(/\s+/)[0] ?? '') : '';
      return { sha, said: oneLine(mv.stderr, LAST_WORDS) };
    },
  };
}
