/**
 * What wsl.exe prints, read without trusting its words. `wsl.exe --list --verbose` (and every
 * message of wsl.exe itself) is UTF-16LE without a byte-order mark, unless WSL_UTF8=1 was in its
 * environment (then UTF-8): the encoding is told from the bytes, not from the variable, since
 * the variable may not reach wsl.exe (from inside WSL it must also be listed in WSLENV). The
 * text is localised (the header, the state words, the messages), so the table is read by the
 * positions of its columns and only non-localised tokens (error codes such as
 * WSL_E_DISTRO_NOT_FOUND, URLs) are looked for in messages.
 *
 * The table, as microsoft/WSL's ListDistributionsHelper prints it (src/windows/common/WslClient.cpp):
 * `"%s %-Ns%-16s%s\n"`: a "*" (the default distribution) or a space, a space, the name padded,
 * the state padded to 16, the WSL version number; a header line first; the default sorted first.
 */

export interface WslDistro {
  name: string;
  /** The state as wsl.exe wrote it ("Running", "Stopped", "Wird ausgeführt", …): shown, never compared. */
  state: string;
  /** 1 or 2. */
  version: number;
  isDefault: boolean;
}

/**
 * Decodes what wsl.exe printed. A Buffer (this machine's wsl.exe): UTF-16LE when the bytes say
 * so (a byte-order mark, or NUL bytes in the odd positions, which ASCII text in UTF-16LE has),
 * lines of UTF-8 then UTF-16LE when they say that (utf16leStart), else UTF-8, else a legacy
 * code page (decodeLegacy). A string (what a previous hop already
 * decoded as UTF-8): UTF-16LE text shows as
 * characters separated by NULs there, which are dropped; characters outside ASCII were lost on
 * that hop already (they show as U+FFFD), which spares the distribution names (ASCII) and the
 * error codes.
 */
export function decodeWslOutput(output: Buffer | string): string {
  if (typeof output === 'string') return output.replace(/^\uFEFF/, '').replace(/\u0000/g, '');
  if (output.length >= 2 && output[0] === 0xff && output[1] === 0xfe) return output.subarray(2).toString('utf16le');
  const at = utf16leStart(output);
  if (at !== undefined) return UTF8.decode(output.subarray(0, at)) + utf16le(output.subarray(at));
  if (looksUtf16le(output)) return utf16le(output);
  try {
    return UTF8.decode(output).replace(/^\uFEFF/, '');
  } catch {
    return decodeLegacy(output);
  }
}

const utf16le = (bytes: Buffer) => bytes.subarray(0, bytes.length - (bytes.length % 2)).toString('utf16le');

/**
 * Where wsl.exe's UTF-16LE message starts after lines of UTF-8 in one stream, or undefined when
 * the bytes are not so. A WSL 2 distribution's init writes its errors in UTF-8 to the stream
 * that wsl.exe then writes its own message to ("<3>WSL (11) ERROR: ... getpwnam(zlx) failed 17"
 * then "找不到用户。", microsoft/WSL#12028). The message starts at a line's start before the
 * first NUL byte, an odd number of bytes before it (a NUL is the high byte of an ASCII character
 * in UTF-16LE); from there every NUL is such a high byte; and the lines before are UTF-8 text.
 * The latest such start is taken: a UTF-16LE character with a 0x0A byte puts the NULs after it
 * at even distances, so no start inside the message qualifies.
 */
function utf16leStart(bytes: Buffer): number | undefined {
  const firstNul = bytes.indexOf(0);
  for (let nl = bytes.lastIndexOf(0x0a, firstNul - 2); firstNul > 0 && nl >= 0; nl = bytes.lastIndexOf(0x0a, nl - 1)) {
    const at = nl + 1;
    if ((firstNul - at) % 2 === 0) continue;
    let nulAtEven = false;
    for (let i = at; i < bytes.length && !nulAtEven; i += 2) nulAtEven = bytes[i] === 0;
    if (!nulAtEven && isUtf8Text(bytes.subarray(0, at))) return at;
  }
  return undefined;
}

/** Valid UTF-8 without control characters other than tab and line ends. */
function isUtf8Text(bytes: Buffer): boolean {
  try {
    return !/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(UTF8.decode(bytes));
  } catch {
    return false;
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const WINDOWS_1252 = new TextDecoder('windows-1252');

/**
 * Bytes that are neither UTF-16LE nor UTF-8: a legacy Windows code page (a program that writes
 * narrow text, not wsl.exe's own messages). Which one is not told by the bytes; two are told
 * apart: the ANSI code page 1252 (what a narrow write to a pipe gives in Western Europe), unless
 * a byte that 1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) is there, then the OEM code
 * page 850 (a console's), whose letters lie in 0x80-0x9F ("ü" is 0x81 there, 0xFC in 1252).
 */
function decodeLegacy(bytes: Buffer): string {
  if (!bytes.some((byte) => byte === 0x81 || byte === 0x8d || byte === 0x8f || byte === 0x90 || byte === 0x9d))
    return WINDOWS_1252.decode(bytes);
  let text = '';
  for (const byte of bytes) text += byte < 0x80 ? String.fromCharCode(byte) : CP850_HIGH[byte - 0x80];
  return text;
}

/** Code page 850's characters for the bytes 0x80-0xFF. */
const CP850_HIGH =
  'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜø£Ø×ƒáíóúñÑªº¿®¬½¼¡«»░▒▓│┤ÁÂÀ©╣║╗╝¢¥┐└┴┬├─┼ãÃ╚╔╩╦╠═╬¤ðÐÊËÈıÍÎÏ┘┌█▄¦Ì▀ÓßÔÒõÕµþÞÚÛÙýÝ¯´\u00ad±‗¾¶§÷¸°¨·¹³²■\u00a0';

/** Most odd bytes NUL, few even ones: text of mostly ASCII characters in UTF-16LE. */
function looksUtf16le(bytes: Buffer): boolean {
  if (bytes.length < 2) return false;
  let oddNul = 0;
  let evenNul = 0;
  const evenLength = bytes.length - (bytes.length % 2);
  for (let i = 0; i < evenLength; i += 2) {
    if (bytes[i] === 0) evenNul++;
    if (bytes[i + 1] === 0) oddNul++;
  }
  const pairs = evenLength / 2;
  return oddNul >= pairs / 2 && evenNul < pairs / 4;
}

/**
 * The distributions in `wsl.exe --list --verbose` output (decoded). Lines that are not rows
 * (the header, whose last column is a word, blank lines) are skipped; a row is: the marker
 * column, the name (distribution names have no spaces), the state (any words, localised), and
 * the version number last.
 */
export function parseWslList(text: string): WslDistro[] {
  const distros: WslDistro[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\r$/, '');
    const match = /^([* ])\s*(\S+)\s+(.*?)\s*(\d+)\s*$/.exec(line);
    if (!match) continue;
    const [, marker, name, state, version] = match;
    distros.push({ name: name!, state: state!.trim(), version: Number(version), isDefault: marker === '*' });
  }
  return distros;
}

/** Non-localised tokens in wsl.exe's messages, for telling its failures apart. */
export const WslToken = {
  distroNotFound: /WSL_E_DISTRO_NOT_FOUND/,
  noDistros: /WSL_E_DEFAULT_DISTRO_NOT_FOUND/,
  userNotFound: /WSL_E_USER_NOT_FOUND/,
  /**
   * WSL not installed: the inbox wsl.exe's "…is not installed… https://aka.ms/wslinstall", the
   * optional component not enabled (0x8007019e), or its WSL_E_ code.
   */
  notInstalled: /aka\.ms\/wslinstall|0x8007019e|WSL_E_WSL_OPTIONAL_COMPONENT_REQUIRED|WSL_E_NOT_INSTALLED/i,
  /** "Error code: Wsl/…": any wsl.exe error (the words before it are localised). */
  anyError: /\bWsl\/[A-Za-z0-9_/]+|\bWSL_E_[A-Z0-9_]+|\b0x8[0-9a-fA-F]{7}\b/,
} as const;
