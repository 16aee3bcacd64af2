import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { quoteArgv, quoteCmd, quotePosix, quotePowerShell } from './quote.ts';

/** Arguments built to break naive quoting. */
const adversarial = [
  'plain',
  'two words',
  '',
  "single'quote",
  'double"quote',
  `both'"kinds`,
  '$HOME',
  '${PATH}',
  '$(id)',
  '`id`',
  '%PATH%',
  '^caret',
  'semi;colon',
  'amp&ersand && more',
  'pipe|line',
  'redir>out <in',
  'new\nline',
  'tab\there',
  'back\\slash\\',
  'trailing backslash \\',
  'quote at end"',
  '\\"already escaped\\"',
  'glob * ? [a]',
  '~tilde',
  '!bang',
  '(paren)',
  'ünïcødé ✓ 漢字',
  "'$(rm -rf /)'",
  '-flag-looking',
];

describe('POSIX quoting, through a real sh', () => {
  it('passes every adversarial argument through sh -c unchanged', () => {
    const line = `printf '%s\\0' ${quoteArgv(adversarial, 'posix')}`;
    const out = execFileSync('sh', ['-c', line], { encoding: 'utf8' });
    expect(out.split('\0').slice(0, -1)).toEqual(adversarial);
  });

  it('quotes the empty string and single quotes', () => {
    expect(quotePosix('')).toBe("''");
    expect(quotePosix("it's")).toBe(`'it'\\''s'`);
  });
});

describe('PowerShell quoting (unit: no PowerShell runs here; test/windows/windows-quoting.test.ts says why and what is tested instead)', () => {
  it.each([
    ['plain', "'plain'"],
    ["it's", "'it''s'"],
    ['$env:PATH', "'$env:PATH'"],
    ['`n', "'`n'"],
    ['a"b', `'a"b'`],
    ['‘smart’', "'‘‘smart’’'"],
    ['semi;colon & amp', "'semi;colon & amp'"],
    ['new\nline', "'new\nline'"],
    ['', "''"],
  ])('%j -> %s', (arg, quoted) => {
    expect(quotePowerShell(arg)).toBe(quoted);
  });

  it('runs the program with the call operator', () => {
    expect(quoteArgv(['C:\\Program Files\\cudaprobe.exe', 'run', 'sysinfo'], 'powershell')).toBe(
      "& 'C:\\Program Files\\cudaprobe.exe' 'run' 'sysinfo'",
    );
  });

  it('leaves nothing outside single quotes, so no $, backtick or ; is ever interpreted', () => {
    for (const input of adversarial) {
      const quoted = quotePowerShell(input);
      expect(quoted.startsWith("'") && quoted.endsWith("'")).toBe(true);
      // Inside, every quote character comes in pairs.
      expect(quoted.slice(1, -1).replace(/(['‘’‚‛])\1/g, '')).not.toMatch(/['‘’‚‛]/);
    }
  });
});

describe('cmd.exe quoting (unit; the round trip through cmd.exe under Wine is test/windows/windows-quoting.test.ts)', () => {
  it.each([
    ['plain', '^"plain^"'],
    ['two words', '^"two words^"'],
    ['%PATH%', '^"^%PATH^%^"'],
    ['a&b|c', '^"a^&b^|c^"'],
    ['say "hi"', '^"say \\^"hi\\^"^"'],
    ['C:\\dir\\', '^"C:\\dir\\\\^"'],
    ['back\\"quote', '^"back\\\\\\^"quote^"'],
    ['^caret', '^"^^caret^"'],
    ['(x) <y> !z', '^"^(x^) ^<y^> ^!z^"'],
    ['', '^"^"'],
  ])('%j -> %s', (arg, quoted) => {
    expect(quoteCmd(arg)).toBe(quoted);
  });

  it('refuses line breaks, which cmd cannot pass', () => {
    expect(() => quoteCmd('a\nb')).toThrow(/cmd.exe cannot pass an argument with a line break/);
  });

  it('escapes every cmd metacharacter outside of what CommandLineToArgvW will read', () => {
    for (const input of adversarial.filter((candidate) => !candidate.includes('\n'))) {
      // After cmd removes the carets, what remains is a normal "..." argument.
      const afterCmd = quoteCmd(input).replace(/\^(.)/g, '$1');
      expect(afterCmd.startsWith('"') && afterCmd.endsWith('"')).toBe(true);
    }
  });
});
