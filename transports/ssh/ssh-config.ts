/**
 * ~/.ssh/config, read the way OpenSSH reads it for the options cudamatrix uses: Host blocks
 * with wildcard and negated patterns, the first value of each keyword wins (IdentityFile adds
 * up), Include, the %h %p %r %u %d %% tokens and ~ in paths. Match blocks are not evaluated
 * (their options are ignored, and the result says so).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
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
  const m = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(line);
  if (!m) return undefined;
  let value = m[2]!.trim();
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
  return { key: m[1]!.toLowerCase(), value };
}

function readLines(file: string, depth = 0): Line[] {
  if (depth > 8 || !existsSync(file) || !statSync(file).isFile()) return [];
  const out: Line[] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const kv = splitLine(raw);
      if (!kv) return;
      if (kv.key === 'include') {
        for (const inc of kv.value.split(/\s+/)) {
          const p = expandHome(inc);
          const full = path.isAbsolute(p) ? p : path.join(homedir(), '.ssh', p);
          for (const f of expandGlob(full)) out.push(...readLines(f, depth + 1));
        }
        return;
      }
      out.push({ ...kv, file, line: i + 1 });
    });
  return out;
}

function expandGlob(pattern: string): string[] {
  if (!/[*?]/.test(pattern)) return [pattern];
  const dir = path.dirname(pattern);
  if (!existsSync(dir)) return [];
  const re = sshGlob(path.basename(pattern));
  return readdirSorted(dir)
    .filter((f) => re.test(f))
    .map((f) => path.join(dir, f));
}

function readdirSorted(dir: string): string[] {
  return readdirSync(dir).sort();
}

export function expandHome(p: string): string {
  return p === '~' ? homedir() : p.startsWith('~/') ? path.join(homedir(), p.slice(2)) : p;
}

function patternMatches(patterns: string, host: string): boolean {
  let matched = false;
  for (const p of patterns.split(/[\s,]+/).filter(Boolean)) {
    const negate = p.startsWith('!');
    if (sshGlob(negate ? p.slice(1) : p).test(host)) {
      if (negate) return false;
      matched = true;
    }
  }
  return matched;
}

/** Resolves `alias` against an ssh_config file (default ~/.ssh/config). */
export function resolveSshConfig(alias: string, configFile: string | false = path.join(homedir(), '.ssh', 'config')): ResolvedHost {
  const lines = configFile ? readLines(configFile) : [];
  const values = new Map<string, string>();
  const identityFiles: string[] = [];
  const notes: string[] = [];
  let active = true; // options before the first Host line apply to every host
  for (const l of lines) {
    if (l.key === 'host') {
      active = patternMatches(l.value, alias);
      continue;
    }
    if (l.key === 'match') {
      active = false;
      notes.push(`${l.file}:${l.line}: Match blocks are not evaluated; their options were not applied`);
      continue;
    }
    if (!active) continue;
    if (l.key === 'identityfile') identityFiles.push(l.value);
    else if (!values.has(l.key)) values.set(l.key, l.value);
  }
  const hostName = (values.get('hostname') ?? alias).replace(/%h/g, alias);
  const port = values.has('port') ? Number(values.get('port')) : undefined;
  const user = values.get('user');
  const tokens = (s: string) =>
    expandHome(
      s.replace(/%(.)/g, (_m, c: string) => {
        switch (c) {
          case 'h':
            return hostName;
          case 'p':
            return String(port ?? 22);
          case 'r':
            return user ?? userInfo().username;
          case 'u':
            return userInfo().username;
          case 'd':
            return homedir();
          case '%':
            return '%';
          default:
            return `%${c}`;
        }
      }),
    );
  const knownHosts = values.get('userknownhostsfile');
  const proxyJump = values.get('proxyjump');
  return {
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
}

/** "user@host:port" or "host" (ProxyJump's hop syntax) -> its parts. */
export function parseJumpHop(hop: string): { user?: string; host: string; port?: number } {
  const m = /^(?:([^@]+)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hop.trim());
  if (!m) return { host: hop.trim() };
  return { user: m[1], host: m[2]!.replace(/^\[|\]$/g, ''), port: m[3] ? Number(m[3]) : undefined };
}
