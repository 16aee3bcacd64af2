/**
 * ~/.ssh/config, read the way OpenSSH reads it for the options cudamatrix uses: the fallback where
 * `ssh -G` cannot be run (ssh-config-resolve.ts). Host blocks with wildcard and negated patterns,
 * the first value of each keyword wins (IdentityFile adds up), Include (in its block's state), the
 * %h %p %r %u %d %% tokens and ~ in paths. Not handled: Match blocks (their options are ignored,
 * and the result says so), /etc/ssh/ssh_config, CanonicalizeHostname, and the other tokens.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import path from 'node:path';
import { sshGlob } from './glob.ts';

export interface ResolvedHost {
  /** The alias the matrix named. */
  alias: string;
  hostName: string;
  port?: number;
  user?: string;
  identityFiles: string[];
  proxyJump?: string;
  userKnownHostsFiles: string[];
  identitiesOnly?: boolean;
  /** Notes on what was not applied (Match blocks). */
  notes: string[];
}

interface Line {
  key: string;
  value: string;
  file: string;
  line: number;
}

function splitLine(raw: string): { key: string; value: string } | undefined {
  const line = raw.trim();
  if (!line || line.startsWith('#')) return undefined;
  const match = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(line);
  if (!match) return undefined;
  let value = match[2]!.trim();
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
  return { key: match[1]!.toLowerCase(), value };
}

/**
 * The options of `file` that apply to `alias`, in order, as OpenSSH's readconf.c picks them: a
 * Host line makes the lines after it apply or not; an Include is read in the including block's
 * state, and never matches at all inside a block that does not apply (SSHCONF_NEVERMATCH); after
 * it, the including block's state comes back, whatever Host lines the included files had.
 */
function applicableLines(
  file: string,
  alias: string,
  block: { active: boolean },
  neverMatch: boolean,
  read: { notes: string[]; files: string[]; versions: string[]; includeBase: string },
  depth = 0,
): Line[] {
  const known = depth > 8 ? undefined : configLines(file);
  if (!known) return [];
  read.files.push(file);
  read.versions.push(known.version);
  const fileLines = known.lines;
  const out: Line[] = [];
  fileLines.forEach((kv, i) => {
    if (!kv) return;
    if (kv.key === 'host') {
      block.active = !neverMatch && patternMatches(kv.value, alias);
    } else if (kv.key === 'match') {
      block.active = false;
      read.notes.push(`${file}:${i + 1}: Match blocks are not evaluated; their options were not applied`);
    } else if (kv.key === 'include') {
      const including = block.active;
      for (const inc of kv.value.split(/\s+/)) {
        const includePath = expandHome(inc);
        const full = path.isAbsolute(includePath) ? includePath : path.join(read.includeBase, includePath);
        for (const includedFile of expandGlob(full)) {
          out.push(...applicableLines(includedFile, alias, block, neverMatch || !including, read, depth + 1));
          block.active = including;
        }
      }
    } else if (block.active) {
      out.push({ ...kv, file, line: i + 1 });
    }
  });
  return out;
}

/**
 * A file's lines, split; undefined where it is not a file. Kept while its size and modification
 * time stay: a fleet's matrix resolves thousands of aliases against the same few files.
 */
function configLines(file: string): ReadConfig | undefined {
  const st = statSync(file, { throwIfNoEntry: false });
  if (!st?.isFile()) return undefined;
  const version = `${file}@${st.mtimeMs}:${st.size}`;
  let known = readFiles.get(file);
  if (known?.version !== version) {
    known = { version, lines: readFileSync(file, 'utf8').split('\n').map(splitLine) };
    readFiles.set(file, known);
  }
  return known;
}

/** A config file as read: its lines split (undefined: blank or a comment), and which version of the file they are. */
interface ReadConfig {
  version: string;
  lines: ({ key: string; value: string } | undefined)[];
}

const readFiles = new Map<string, ReadConfig>();

function expandGlob(pattern: string): string[] {
  if (!/[*?]/.test(pattern)) return [pattern];
  const dir = path.dirname(pattern);
  const names = sortedNames(dir);
  if (!names) return [];
  const re = sshGlob(path.basename(pattern));
  return names.filter((fileName) => re.test(fileName)).map((fileName) => path.join(dir, fileName));
}

/** A folder's names, sorted, kept while its modification time stays; undefined where there is no folder. */
function sortedNames(dir: string): string[] | undefined {
  const st = statSync(dir, { throwIfNoEntry: false });
  if (!st?.isDirectory()) return undefined;
  const known = readDirs.get(dir);
  if (known && known.mtimeMs === st.mtimeMs) return known.names;
  const names = readdirSync(dir).sort();
  readDirs.set(dir, { mtimeMs: st.mtimeMs, names });
  return names;
}

const readDirs = new Map<string, { mtimeMs: number; names: string[] }>();

export function expandHome(filePath: string): string {
  return filePath === '~' ? homedir() : filePath.startsWith('~/') ? path.join(homedir(), filePath.slice(2)) : filePath;
}

function patternMatches(patterns: string, host: string): boolean {
  let matched = false;
  for (const pattern of patterns.split(/[\s,]+/).filter(Boolean)) {
    const negate = pattern.startsWith('!');
    if (sshGlob(negate ? pattern.slice(1) : pattern).test(host)) {
      if (negate) return false;
      matched = true;
    }
  }
  return matched;
}

/** The port and user given apart from the config (the target's own options), as ssh's -p and -l. */
export interface GivenOptions {
  port?: number;
  user?: string;
}

/**
 * A path option's %-tokens (%h %p %r %u %d %%) and leading ~ expanded, as ssh expands IdentityFile
 * and UserKnownHostsFile; other tokens stay as written.
 */
export function expandPathTokens(value: string, to: { hostName: string; port?: number; user?: string }): string {
  return expandHome(
    value.replace(/%(.)/g, (_m, token: string) => {
      switch (token) {
        case 'h':
          return to.hostName;
        case 'p':
          return String(to.port ?? 22);
        case 'r':
          return to.user ?? userInfo().username;
        case 'u':
          return userInfo().username;
        case 'd':
          return homedir();
        case '%':
          return '%';
        default:
          return `%${token}`;
      }
    }),
  );
}

/** The folder a user configuration's relative Include paths are taken from, as ssh takes them. */
export const userConfigFolder = () => path.join(homedir(), '.ssh');

/**
 * Resolves `alias` against an ssh_config file (default ~/.ssh/config) with this parser alone: the
 * fallback where OpenSSH's `ssh -G` cannot be run (ssh-config-resolve.ts).
 */
export function parseSshConfig(
  alias: string,
  configFile: string | false = path.join(homedir(), '.ssh', 'config'),
  given: GivenOptions = {},
): ResolvedHost {
  return parseSshConfigFiles(alias, configFile ? [{ file: configFile, includeBase: userConfigFolder() }] : [], given).resolved;
}

/** An ssh_config file to read, and the folder its relative Include paths are taken from (~/.ssh, or a system file's own). */
export interface ConfigFile {
  file: string;
  includeBase: string;
}

/**
 * parseSshConfig over several files, read in order (ssh reads the user's, then the system's:
 * the first value of a keyword wins), with what the reading saw: the lines that apply to the
 * alias (as "file:line:keyword"), every file read (and which version of it: its modification time
 * and size), and the notes (Match blocks).
 */
export function parseSshConfigFiles(
  alias: string,
  files: ConfigFile[],
  given: GivenOptions = {},
): { resolved: ResolvedHost; applied: string[]; filesRead: string[]; versions: string[] } {
  const notes: string[] = [];
  const filesRead: string[] = [];
  const versions: string[] = [];
  // options before the first Host line apply to every host
  const lines = files.flatMap(({ file, includeBase }) =>
    applicableLines(file, alias, { active: true }, false, { notes, files: filesRead, versions, includeBase }),
  );
  const values = new Map<string, string>();
  const identityFiles: string[] = [];
  for (const line of lines) {
    if (line.key === 'identityfile') identityFiles.push(line.value);
    else if (!values.has(line.key)) values.set(line.key, line.value);
  }
  const hostName = (values.get('hostname') ?? alias).replace(/%h/g, alias);
  const port = values.has('port') ? Number(values.get('port')) : undefined;
  const user = values.get('user');
  const tokens = (value: string) => expandPathTokens(value, { hostName, port: given.port ?? port, user: given.user ?? user });
  const knownHosts = values.get('userknownhostsfile');
  const proxyJump = values.get('proxyjump');
  const resolved: ResolvedHost = {
    alias,
    hostName,
    port,
    user,
    identityFiles: identityFiles.map(tokens),
    proxyJump: proxyJump && proxyJump.toLowerCase() !== 'none' ? proxyJump : undefined,
    userKnownHostsFiles: knownHosts ? knownHosts.split(/\s+/).map(tokens) : [],
    identitiesOnly: values.has('identitiesonly') ? values.get('identitiesonly')!.toLowerCase() === 'yes' : undefined,
    notes,
  };
  return { resolved, applied: lines.map((line) => `${line.file}:${line.line}:${line.key}`), filesRead, versions };
}

/** "user@host:port" or "host" (ProxyJump's hop syntax) -> its parts. */
export function parseJumpHop(hop: string): { user?: string; host: string; port?: number } {
  const match = /^(?:([^@]+)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hop.trim());
  if (!match) return { host: hop.trim() };
  return { user: match[1], host: match[2]!.replace(/^\[|\]$/g, ''), port: match[3] ? Number(match[3]) : undefined };
}
