#!/usr/bin/env node
/*
 * A STAND-IN for Windows' wsl.exe, for cudamatrix's tests. It is not WSL and runs no Windows
 * code: no Windows machine is reachable from this project's machines, so the WSL transport is
 * exercised against this program, which ./wsl.exe runs: that folder goes on PATH (on this
 * machine, or on the PATH of the test sshd's sessions for [ssh, wsl]). It behaves like the real wsl.exe in what cudamatrix
 * relies on, and refuses everything else:
 *
 *   wsl.exe --list --verbose | -l -v | --list -v | -l --verbose
 *   wsl.exe [--distribution|-d NAME] [--user|-u USER] [--cd DIR] --exec|-e PROGRAM ARGS...
 *
 * - Its own output (the list, every message) is UTF-16LE without a byte-order mark, with CRLF
 *   line ends, unless WSL_UTF8 is exactly "1" (then UTF-8): microsoft/WSL WslClient.cpp sets the
 *   C runtime to _O_U16TEXT unless getenv("WSL_UTF8") is "1" (then _O_U8TEXT); wprintf in text
 *   mode writes "\n" as "\r\n". A program run with --exec writes its own bytes, unchanged.
 * - The list: a header line, then one row per distribution, the default one first and marked
 *   "*", printed with ListDistributionsHelper's format "%s %-Ns%-16s%s\n" (N = the longest name,
 *   at least "NAME", plus 4). The header and state words follow the machine's locale: "en-US"
 *   (NAME STATE VERSION, Running/Stopped, as in WslClient.cpp), "zh-CN" (the en-US table with
 *   Chinese messages) or "de-DE" (NAME STATUS VERSION,
 *   "Wird ausgeführt"/"Beendet": this stand-in's own German rendering, there to prove that
 *   cudamatrix reads no words; the real German strings may differ).
 * - Failures of wsl.exe itself exit with -1 (255 as a POSIX exit status): WslMain "uses exit code
 *   -1 so invokers of wsl.exe can distinguish between a Linux process failure and a wsl.exe
 *   failure". A missing distribution prints "There is no distribution with the supplied name."
 *   and "Error code: Wsl/Service/WSL_E_DISTRO_NOT_FOUND" (the text as WSL's en-US Resources.resw
 *   MessageDistroNotFound has it; the code line as users report it, e.g. microsoft/WSL#12654,
 *   docker/for-win#14948: "exit status 0xffffffff"). No distribution at all: "Windows Subsystem
 *   for Linux has no installed distributions..." without an error code line (WslClient.cpp does
 *   not print the code for WSL_E_DEFAULT_DISTRO_NOT_FOUND). An unknown option: "Invalid command
 *   line argument: X" / "Please use 'wsl.exe --help'..." on stdout (MessageInvalidCommandLine).
 *   WSL not installed (the inbox wsl.exe without the WSL package): "The Windows Subsystem for
 *   Linux is not installed. You can install by running 'wsl.exe --install'." and the
 *   https://aka.ms/wslinstall link, as users quote it; its exit status is this stand-in's guess.
 *   Messages go to stderr except those WslClient.cpp prints to stdout. With "initSays": true in
 *   distros.json, a user missing in a WSL 2 distribution is said first by its init, in UTF-8
 *   ("<3>WSL (11) ERROR: CreateProcessParseCommon:740: getpwnam(zlx) failed 17", as
 *   microsoft/WSL#12028 shows it before the UTF-16LE "找不到用户。").
 * - A distribution is a folder, $CUDAMATRIX_WSL_STANDIN_ROOT/<name>/, with a root filesystem of
 *   its own (busybox, the libraries cudaprobe needs, /etc/passwd, /dev/null, and for a WSL 2
 *   distribution with a GPU /dev/dxg and /usr/lib/wsl/lib/libcuda.so.1, here empty files: the
 *   driver does not load, as on a machine without a usable GPU). The machine is
 *   $CUDAMATRIX_WSL_STANDIN_ROOT/distros.json:
 *     {"installed": true, "locale": "en-US",
 *      "distros": [{"name": "Ubuntu-24.04", "state": "Stopped", "version": 2, "default": true, "defaultUser": "root"}]}
 *   --exec runs the program chrooted into that folder, with a /proc mounted in a mount namespace
 *   of the command's own (so this stand-in must run as root, with unshare and mount), as the
 *   user (from its /etc/passwd), with a fresh Linux environment (PATH, HOME, USER, SHELL,
 *   WSL_DISTRO_NAME, and the variables WSLENV lists, as WSL passes them), in a session of its
 *   own. Running a command starts a stopped distribution (its state becomes Running).
 * - Killing wsl.exe does not end the Linux processes it started (microsoft/WSL#2496: they are
 *   reparented to init). This stand-in relays the program's stdio through its own pipes and is
 *   their parent, as WSL's per-command relay is; it ends on a signal without passing it on, and
 *   when its own stdout is gone (a closed channel), so the Linux side sees its parent go.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const FAILED = 255; // -1 as a POSIX exit status
const utf8 = process.env.WSL_UTF8 === '1';

const strings = {
  'en-US': {
    header: ['NAME', 'STATE', 'VERSION'],
    Running: 'Running',
    Stopped: 'Stopped',
    errorCode: 'Error code',
    distroNotFound: 'There is no distribution with the supplied name.',
    noDistros:
      "Windows Subsystem for Linux has no installed distributions.\nYou can resolve this by installing a distribution with the instructions below:\n\nUse 'wsl.exe --list --online' to list available distributions\nand 'wsl.exe --install <Distro>' to install.",
    invalidArgument: (arg) => `Invalid command line argument: ${arg}\nPlease use 'wsl.exe --help' to get a list of supported arguments.`,
    missingValue: (arg) =>
      `Command line argument ${arg} requires a value.\nPlease use 'wsl.exe --help' to get a list of supported arguments.`,
    userNotFound: 'User not found.',
    invalidParameter: 'The parameter is incorrect.',
    notInstalled:
      "The Windows Subsystem for Linux is not installed. You can install by running 'wsl.exe --install'.\nFor more information please visit https://aka.ms/wslinstall",
  },
  'de-DE': {
    header: ['NAME', 'STATUS', 'VERSION'],
    Running: 'Wird ausgeführt',
    Stopped: 'Beendet',
    errorCode: 'Fehlercode',
    distroNotFound: 'Es ist keine Distribution mit dem angegebenen Namen vorhanden.',
    noDistros:
      "Für das Windows-Subsystem für Linux sind keine Distributionen installiert.\nVerwenden Sie 'wsl.exe --list --online', um verfügbare Distributionen aufzulisten,\nund 'wsl.exe --install <Distro>' für die Installation.",
    invalidArgument: (arg) =>
      `Ungültiges Befehlszeilenargument: ${arg}\nVerwenden Sie 'wsl.exe --help', um eine Liste der unterstützten Argumente abzurufen.`,
    missingValue: (arg) =>
      `Das Befehlszeilenargument ${arg} erfordert einen Wert.\nVerwenden Sie 'wsl.exe --help', um eine Liste der unterstützten Argumente abzurufen.`,
    userNotFound: 'Kein Benutzer für diesen Namen gefunden.',
    invalidParameter: 'Falscher Parameter.',
    notInstalled:
      "Das Windows-Subsystem für Linux ist nicht installiert. Sie können es installieren, indem Sie 'wsl.exe --install' ausführen.\nWeitere Informationen finden Sie unter https://aka.ms/wslinstall",
  },
};
// The messages of a Chinese Windows, as far as the tests need them (this stand-in's own rendering).
strings['zh-CN'] = {
  ...strings['en-US'],
  errorCode: '错误代码',
  userNotFound: '找不到用户。',
  distroNotFound: '不存在具有所提供名称的分发。',
};

/** Code page 850's characters for the bytes 0x80-0xFF. */
const CP850_HIGH =
  'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜø£Ø×ƒáíóúñÑªº¿®¬½¼¡«»░▒▓│┤ÁÂÀ©╣║╗╝¢¥┐└┴┬├─┼ãÃ╚╔╩╦╠═╬¤ðÐÊËÈıÍÎÏ┘┌█▄¦Ì▀ÓßÔÒõÕµþÞÚÛÙýÝ¯´\u00ad±‗¾¶§÷¸°¨·¹³²■\u00a0';

/**
 * wsl.exe's own text: UTF-16LE (no BOM) or UTF-8 under WSL_UTF8=1, CRLF line ends. With
 * "messageEncoding": "cp850" or "windows-1252" in distros.json, a legacy code page instead: not
 * what wsl.exe does, there to test the decoder with the narrow text other Windows programs write.
 */
function encode(text) {
  const crlf = text.replace(/\r?\n/g, '\r\n');
  if (messageEncoding === 'cp850')
    return Buffer.from(
      [...crlf].map((char) => (char.charCodeAt(0) < 0x80 ? char.charCodeAt(0) : 0x80 + Math.max(0, CP850_HIGH.indexOf(char)))),
    );
  if (messageEncoding === 'windows-1252') return Buffer.from(crlf, 'latin1');
  return Buffer.from(crlf, utf8 ? 'utf8' : 'utf16le');
}
let messageEncoding;

function write(stream, text) {
  stream.write(encode(text.endsWith('\n') ? text : `${text}\n`));
}

/** A failure of wsl.exe itself: the message, and exit -1. */
function fail(text, stream = process.stderr) {
  write(stream, text);
  process.exitCode = FAILED;
}

/** Not a behaviour of the real wsl.exe: this stand-in was asked for something it does not do. */
function standinRefuses(why) {
  process.stderr.write(`wsl.exe stand-in (not the real WSL): ${why}\n`);
  process.exitCode = FAILED;
}

const root = process.env.CUDAMATRIX_WSL_STANDIN_ROOT;
const machineFile = root ? path.join(root, 'distros.json') : '';

function loadMachine() {
  return JSON.parse(readFileSync(machineFile, 'utf8'));
}

function saveMachine(machine) {
  const tmp = `${machineFile}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(machine, null, 2)}\n`);
  renameSync(tmp, machineFile);
}

function main(args) {
  if (!root || !existsSync(machineFile)) return standinRefuses('CUDAMATRIX_WSL_STANDIN_ROOT must name a folder with a distros.json');
  const machine = loadMachine();
  messageEncoding = machine.messageEncoding;
  const messages = strings[machine.locale ?? 'en-US'];
  if (!messages) return standinRefuses(`unknown locale ${machine.locale}`);
  if (machine.installed === false) return fail(messages.notInstalled, process.stdout);
  const distros = machine.distros ?? [];
  const find = (name) => distros.find((candidate) => candidate.name.toLowerCase() === name.toLowerCase());

  let distro;
  let user;
  let cwd;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '-d' || arg === '--distribution') {
      const name = args[++i];
      if (!name) return fail(messages.missingValue('--distribution'), process.stdout);
      distro = find(name);
      // As WslMain: the name is looked up as soon as it is read.
      if (!distro) return fail(`${messages.distroNotFound}\n${messages.errorCode}: Wsl/Service/WSL_E_DISTRO_NOT_FOUND`);
    } else if (arg === '-u' || arg === '--user') {
      user = args[++i];
      if (!user) return fail(messages.missingValue('--user'), process.stdout);
    } else if (arg === '--cd') {
      cwd = args[++i];
      if (!cwd) return fail(messages.missingValue('--cd'), process.stdout);
    } else if (arg === '-e' || arg === '--exec') {
      return exec(machine, messages, distro, user, cwd, args.slice(i + 1));
    } else if (arg === '-l' || arg === '--list') {
      const rest = args.slice(i + 1);
      const bad = rest.find((option) => option !== '-v' && option !== '--verbose');
      if (bad !== undefined) return fail(messages.invalidArgument(bad), process.stdout);
      if (rest.length !== 1)
        return standinRefuses(`only "--list --verbose" is supported, not ${JSON.stringify(['--list', ...rest].join(' '))}`);
      return list(machine, messages);
    } else if (arg.startsWith('-')) {
      return fail(messages.invalidArgument(arg), process.stdout);
    } else {
      return standinRefuses(
        `a command line for the default shell (${JSON.stringify(args.slice(i).join(' '))}): cudamatrix only uses --exec`,
      );
    }
  }
  return standinRefuses('no --exec and no --list: the real wsl.exe would start an interactive shell');
}

function list(machine, messages) {
  const distros = [...(machine.distros ?? [])].sort((left, right) => Number(Boolean(right.default)) - Number(Boolean(left.default)));
  if (distros.length === 0) return fail(messages.noDistros);
  const width = Math.max(messages.header[0].length, ...distros.map((distro) => distro.name.length)) + 4;
  const row = (mark, name, state, version) => `${mark} ${name.padEnd(width)}${state.padEnd(16)}${version}\n`;
  let out = row(' ', ...messages.header);
  for (const distro of distros)
    out += row(distro.default ? '*' : ' ', distro.name, messages[distro.state] ?? distro.state, String(distro.version));
  process.stdout.write(encode(out));
}

/** The user's entry in the distribution's /etc/passwd. */
function passwdEntry(distroRoot, name) {
  const file = path.join(distroRoot, 'etc', 'passwd');
  if (!existsSync(file)) return undefined;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [entryName, , uid, gid, , home, shell] = line.split(':');
    if (entryName === name) return { name: entryName, uid, gid, home, shell };
  }
  return undefined;
}

/** The variables WSLENV names ("A:B/p:C/u"), from this process's environment. */
function wslenvVariables() {
  const out = {};
  for (const entry of (process.env.WSLENV ?? '').split(':')) {
    const name = entry.split('/')[0];
    if (name && process.env[name] !== undefined) out[name] = process.env[name];
  }
  if (process.env.WSLENV !== undefined) out.WSLENV = process.env.WSLENV;
  return out;
}

function exec(machine, messages, chosen, userName, cwdArg, command) {
  if (command.length === 0) return fail(`${messages.invalidParameter}\n${messages.errorCode}: Wsl/E_INVALIDARG`);
  const distro = chosen ?? (machine.distros ?? []).find((candidate) => candidate.default);
  if (!distro) return fail(messages.noDistros);
  if (process.getuid?.() !== 0) return standinRefuses('it runs distributions with chroot, which needs root');
  const distroRoot = path.join(root, distro.name);
  if (!existsSync(distroRoot)) return standinRefuses(`no root filesystem for ${distro.name} at ${distroRoot}`);
  const account = passwdEntry(distroRoot, userName ?? distro.defaultUser ?? 'root');
  if (!account) {
    // "initSays": true in distros.json: a WSL 2 distribution's init first says so itself, in
    // UTF-8, on the stream wsl.exe's UTF-16LE message then goes to (microsoft/WSL#12028).
    if (machine.initSays && distro.version === 2)
      process.stderr.write(`<3>WSL (11) ERROR: CreateProcessParseCommon:740: getpwnam(${userName}) failed 17\n`);
    return fail(`${messages.userNotFound}\n${messages.errorCode}: Wsl/Service/CreateInstance/WSL_E_USER_NOT_FOUND`);
  }
  let dir = '/';
  if (cwdArg === '~') dir = account.home;
  else if (cwdArg?.startsWith('/')) dir = cwdArg;
  else if (cwdArg !== undefined) return standinRefuses(`--cd with a Windows path (${cwdArg}): cudamatrix passes Linux paths`);

  // Running a command starts the distribution.
  if (distro.state !== 'Running') {
    const fresh = loadMachine();
    const stored = fresh.distros.find((candidate) => candidate.name === distro.name);
    if (stored && stored.state !== 'Running') {
      stored.state = 'Running';
      saveMachine(fresh);
    }
  }

  const env = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: account.home,
    USER: account.name,
    LOGNAME: account.name,
    SHELL: account.shell || '/bin/sh',
    LANG: 'C.UTF-8',
    WSL_DISTRO_NAME: distro.name,
    ...wslenvVariables(),
  };
  const chroot = ['/usr/sbin/chroot', '/usr/bin/chroot'].find((candidate) => existsSync(candidate)) ?? 'chroot';
  const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((candidate) => existsSync(candidate)) ?? 'unshare';
  // The distribution's /proc: mounted in a mount namespace of this command's own (gone when its
  // processes are), so that nothing is mounted on this machine. Then init's part: change to the
  // directory (or stay at / when it is not there), and exec the program.
  const inside = [
    chroot,
    `--userspec=${account.uid}:${account.gid}`,
    distroRoot,
    '/bin/sh',
    '-c',
    'cd "$1" 2>/dev/null || cd /; shift; exec "$@"',
    'wsl-init',
    dir,
    ...command,
  ];
  const child = spawn(
    unshare,
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      'mount -t proc proc "$1/proc" 2>/dev/null; shift; exec "$@"',
      'wsl-vm',
      distroRoot,
      ...inside,
    ],
    {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    },
  );
  // The relay: the program's output through this process; its stdin from ours.
  const relayGone = () => process.exit(FAILED);
  process.stdout.on('error', relayGone);
  process.stderr.on('error', relayGone);
  child.stdout.on('data', (chunk) => process.stdout.write(chunk));
  child.stderr.on('data', (chunk) => process.stderr.write(chunk));
  child.stdin.on('error', () => undefined);
  process.stdin.on('error', () => undefined);
  process.stdin.pipe(child.stdin);
  child.on('error', (e) => standinRefuses(`cannot run chroot: ${e.message}`));
  child.on('close', (code, signal) => {
    process.stdin.unpipe(child.stdin);
    process.stdin.destroy();
    process.exitCode = code ?? 128 + (signal === 'SIGKILL' ? 9 : signal === 'SIGTERM' ? 15 : 1);
  });
}

main(process.argv.slice(2));
