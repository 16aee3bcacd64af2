/**
 * Reading `wsl.exe --list --verbose` without trusting its words: UTF-16LE (no BOM) or UTF-8 told
 * from the bytes, localised headers and states, rows read by column position. The samples are
 * laid out with WSL's own format (microsoft/WSL WslClient.cpp, ListDistributionsHelper:
 * "%s %-Ns%-16s%s\n", N = longest name + 4, CRLF from the C runtime's text mode).
 */
import { describe, expect, it } from 'vitest';
import { decodeWslOutput, parseWslList, WslToken } from './list.ts';

function table(header: [string, string, string], rows: [string, string, string, number][]): string {
  const width = Math.max(header[0].length, ...rows.map((tableRow) => tableRow[1].length)) + 4;
  const row = (mark: string, name: string, state: string, version: string) =>
    `${mark} ${name.padEnd(width)}${state.padEnd(16)}${version}\r\n`;
  return row(' ', ...header) + rows.map(([mark, name, state, version]) => row(mark, name, state, String(version))).join('');
}

const english = table(
  ['NAME', 'STATE', 'VERSION'],
  [
    ['*', 'Ubuntu-24.04', 'Running', 2],
    [' ', 'docker-desktop', 'Stopped', 2],
    [' ', 'Legacy', 'Stopped', 1],
  ],
);
const german = table(
  ['NAME', 'STATUS', 'VERSION'],
  [
    [' ', 'Debian', 'Wird ausgeführt', 2],
    ['*', 'Ubuntu', 'Beendet', 2],
  ],
);

describe('decodeWslOutput', () => {
  it('reads UTF-16LE without a byte-order mark (what wsl.exe writes to a pipe by default)', () => {
    const bytes = Buffer.from(german, 'utf16le');
    expect(bytes[0]).toBe(0x20);
    expect(bytes[1]).toBe(0x00);
    expect(decodeWslOutput(bytes)).toBe(german);
  });

  it('reads UTF-8 (WSL_UTF8=1), with non-ASCII characters intact', () => {
    expect(decodeWslOutput(Buffer.from(german, 'utf8'))).toBe(german);
  });

  it('reads UTF-16LE with a byte-order mark too', () => {
    expect(decodeWslOutput(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(english, 'utf16le')]))).toBe(english);
  });

  it('reads UTF-16LE that a previous hop already decoded as UTF-8: the NULs go, ASCII survives', () => {
    const hopped = Buffer.from(english, 'utf16le').toString('utf8');
    expect(hopped).toContain('\u0000');
    expect(decodeWslOutput(hopped)).toBe(english);
  });

  it('reads Chinese UTF-16LE without a byte-order mark (few NULs: the characters are not ASCII)', () => {
    const said = '找不到用户。\r\n错误代码: Wsl/Service/CreateInstance/WSL_E_USER_NOT_FOUND\r\n';
    expect(decodeWslOutput(Buffer.from(said, 'utf16le'))).toBe(said);
  });

  it("reads init's UTF-8 line followed by wsl.exe's UTF-16LE message in one stream, each in its encoding (microsoft/WSL#12028)", () => {
    const init = '<3>WSL (11) ERROR: CreateProcessParseCommon:740: getpwnam(zlx) failed 17\n';
    for (const said of ['找不到用户。\r\nError code: Wsl/WSL_E_USER_NOT_FOUND\r\n', '找不到用户。\r\n', 'User not found.\r\n']) {
      expect(decodeWslOutput(Buffer.concat([Buffer.from(init, 'utf8'), Buffer.from(said, 'utf16le')]))).toBe(init + said);
      // Two lines of init's, one not ASCII; a character of the message whose UTF-16LE has a 0x0A byte (上: 0A 4E).
      const two = `${init}<3>WSL (11) ERROR: für ${init}`;
      expect(decodeWslOutput(Buffer.concat([Buffer.from(two, 'utf8'), Buffer.from(`上${said}`, 'utf16le')]))).toBe(`${two}上${said}`);
    }
  });

  it('reads a legacy code page where the bytes are not UTF-8: 1252, or 850 where a byte 1252 leaves undefined is there (issue 22.7)', () => {
    expect(decodeWslOutput(Buffer.from([0x66, 0xfc, 0x72]))).toBe('für');
    expect(decodeWslOutput(Buffer.from([0x66, 0x81, 0x72, 0x20, 0x84, 0x94, 0xe1]))).toBe('für äöß');
  });

  it('does not take UTF-8 text with a stray NUL for UTF-16', () => {
    expect(decodeWslOutput(Buffer.from('plain text\u0000 here\n', 'utf8'))).toBe('plain text\u0000 here\n');
  });
});

describe('parseWslList', () => {
  it('reads names, versions and the default by position; states verbatim', () => {
    expect(parseWslList(english)).toEqual([
      { name: 'Ubuntu-24.04', state: 'Running', version: 2, isDefault: true },
      { name: 'docker-desktop', state: 'Stopped', version: 2, isDefault: false },
      { name: 'Legacy', state: 'Stopped', version: 1, isDefault: false },
    ]);
  });

  it('reads a localised table (German header, a state of two words), the default not first', () => {
    expect(parseWslList(german)).toEqual([
      { name: 'Debian', state: 'Wird ausgeführt', version: 2, isDefault: false },
      { name: 'Ubuntu', state: 'Beendet', version: 2, isDefault: true },
    ]);
  });

  it('reads it from the bytes wsl.exe writes, in either encoding', () => {
    expect(parseWslList(decodeWslOutput(Buffer.from(german, 'utf16le')))).toEqual(parseWslList(german));
    expect(parseWslList(decodeWslOutput(Buffer.from(german, 'utf8')))).toEqual(parseWslList(german));
  });

  it('finds no row in a header alone, a message, or usage text', () => {
    expect(parseWslList('  NAME      STATE           VERSION\r\n')).toEqual([]);
    expect(parseWslList('Windows Subsystem for Linux has no installed distributions.\r\n')).toEqual([]);
    expect(parseWslList('Usage: wsl.exe [Argument] [Options...] [CommandLine]\r\n    --exec, -e <CommandLine>\r\n')).toEqual([]);
  });

  it('takes a state in any script, and a long name that widens the columns', () => {
    const listing = table(['名称', '状态', '版本'], [['*', 'Ubuntu-22.04-with-a-long-name', '正在运行', 2]]);
    expect(parseWslList(listing)).toEqual([{ name: 'Ubuntu-22.04-with-a-long-name', state: '正在运行', version: 2, isDefault: true }]);
  });
});

describe('WslToken', () => {
  it('knows wsl.exe failures by their codes and links, whatever the language of the words', () => {
    expect(WslToken.distroNotFound.test('不存在具有所提供名称的分发。\r\nError code: Wsl/Service/WSL_E_DISTRO_NOT_FOUND')).toBe(true);
    expect(WslToken.noDistros.test('Error code: Wsl/WSL_E_DEFAULT_DISTRO_NOT_FOUND')).toBe(true);
    expect(WslToken.distroNotFound.test('Error code: Wsl/WSL_E_DEFAULT_DISTRO_NOT_FOUND')).toBe(false);
    expect(
      WslToken.notInstalled.test(
        "The Windows Subsystem for Linux is not installed. You can install by running 'wsl.exe --install'.\nFor more information please visit https://aka.ms/wslinstall",
      ),
    ).toBe(true);
    expect(WslToken.notInstalled.test('WslRegisterDistribution failed with error: 0x8007019e')).toBe(true);
    expect(WslToken.anyError.test('Server execution failed\r\nError code: Wsl/0x80080005')).toBe(true);
  });
});
