/**
 * Quoting an argv for the shell that runs commands on the remote side. OpenSSH hands the
 * command line to the user's shell: POSIX sh on Linux, and on Windows cmd.exe or PowerShell
 * (Windows OpenSSH's DefaultShell). Each argument is quoted whole; nothing is concatenated raw.
 */
import { CudamatrixError } from '../../core/errors.ts';
import type { Shell } from '../transport.ts';

/** 'it'\''s' — single quotes keep everything literal in sh, even newlines. */
export function quotePosix(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * PowerShell single-quoted strings are literal; a quote inside is doubled. PowerShell also
 * treats the typographic single quotes as quotes, so those are doubled too.
 */
export function quotePowerShell(arg: string): string {
  return `'${arg.replace(/['\u2018\u2019\u201a\u201b]/g, '$&$&')}'`;
}

/**
 * cmd.exe: first quote for the program's own command-line parser (CommandLineToArgvW rules:
 * backslashes before a quote are doubled, a quote is escaped with a backslash), then escape every
 * cmd metacharacter with ^ so that cmd passes the text through unchanged.
 */
export function quoteCmd(arg: string): string {
  if (/[\r\n\0]/.test(arg)) {
    throw new CudamatrixError('USAGE', 'cmd.exe cannot pass an argument with a line break or NUL; use shell: powershell for this target');
  }
  let quoted = '"';
  let backslashes = 0;
  for (const ch of arg) {
    if (ch === '\\') {
      backslashes++;
      continue;
    }
    if (ch === '"') {
      quoted += '\\'.repeat(backslashes * 2 + 1) + '"';
    } else {
      quoted += '\\'.repeat(backslashes) + ch;
    }
    backslashes = 0;
  }
  quoted += `${'\\'.repeat(backslashes * 2)}"`;
  return quoted.replace(/[()%!^"<>&|]/g, '^$&');
}

export function quoteArgv(argv: string[], shell: Shell): string {
  switch (shell) {
    case 'posix':
      return argv.map(quotePosix).join(' ');
    case 'powershell':
      // The call operator runs the program named by the first (quoted) word.
      return `& ${argv.map(quotePowerShell).join(' ')}`;
    case 'cmd': {
      const line = argv.map(quoteCmd).join(' ');
      // Windows OpenSSH runs `cmd.exe /c "LINE"`: its two quotes count too. Over the limit,
      // Microsoft's cmd.exe says "The command line is too long"; Wine's ran nothing and
      // exited 0 (test/windows/windows-quoting.test.ts), which would read as a probe that printed nothing.
      if (line.length + 2 > CMD_MAX_LINE) {
        throw new CudamatrixError(
          'USAGE',
          `the command line for cmd.exe would be ${line.length + 2} characters, and cmd.exe runs at most ${CMD_MAX_LINE}; shorten the arguments (or make PowerShell the host's OpenSSH DefaultShell and set shell: powershell)`,
        );
      }
      return line;
    }
  }
}

/**
 * The longest command line cmd.exe runs, in UTF-16 code units ("The maximum length of the string
 * that you can use at the command prompt is 8191 characters": Microsoft's "Command prompt
 * (Cmd.exe) command-line string limitation").
 */
export const CMD_MAX_LINE = 8191;
