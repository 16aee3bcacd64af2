/**
 * One `ssh -G` for many aliases: a fleet's matrix names thousands of hosts that the same lines of
 * ssh_config apply to (`Host gpu-*`, `Host *`), and `ssh -G` per host cost 30 ms of wall time
 * each (44 s for `gha matrix` of 2,000 targets on the 2-core dev box: bench/scale). Aliases that
 * the same lines apply to form a group; ssh -G resolves its first alias, and each other alias
 * takes from that answer every option the lines give all of them alike, and the options that
 * follow its name (HostName unset or "%h", %h in a path) from the parser, where the parser gave
 * the first alias the very value ssh did. Anything else is resolved by ssh -G as before.
 *
 * A group is formed only where the parser reads what ssh reads: the same files (ssh -v says which
 * it read), no Match block anywhere (it may test anything), no Canonicalize* option (DNS), a
 * lower-case alias (ssh lower-cases the host name), and no %-token the parser leaves unexpanded.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { homedir } from 'node:os';
import { parseSshConfigFiles, userConfigFolder, type ConfigFile, type GivenOptions, type ResolvedHost } from './ssh-config.ts';

/** The system-wide ssh_config OpenSSH reads after the user's (checked against what ssh -v says it read). */
const SYSTEM_CONFIG = '/etc/ssh/ssh_config';
/** An alias no config is likely to name: what ssh reads for it shows which files it reads at all. */
const PROBE_ALIAS = 'cudamatrix-config-probe';
const PROBE_TIMEOUT_MS = 5000;

/** The options a member of a group takes, field by field. */
const FIELDS = ['hostName', 'port', 'user', 'identityFiles', 'proxyJump', 'userKnownHostsFiles', 'identitiesOnly'] as const;

interface Group {
  /** ssh -G's answer for the group's first alias, and the parser's. */
  bySsh: ResolvedHost;
  byParser: ResolvedHost;
}

export class SharedResolutions {
  private readonly groups = new Map<string, Group>();
  /** Per ssh program and config: the files the parser reads, or undefined where it does not read what ssh reads. */
  private readonly layouts = new Map<string, ConfigFile[] | undefined>();

  /**
   * The group of an alias (its key, and the parser's answer for it), or undefined where it must
   * have an ssh -G of its own.
   */
  groupOf(
    ssh: string,
    alias: string,
    configFile: string | false | undefined,
    given: GivenOptions,
  ): { key: string; byParser: ResolvedHost } | undefined {
    if (process.platform === 'win32' || alias !== alias.toLowerCase()) return undefined;
    const files = this.layout(ssh, configFile);
    if (!files) return undefined;
    const { resolved, applied, versions } = parseSshConfigFiles(alias, files, given);
    if (resolved.notes.length || applied.some((line) => line.endsWith(':canonicalizehostname') || line.endsWith(':canonicaldomains')))
      return undefined;
    return {
      key: JSON.stringify([ssh, configFile ?? null, given.port ?? null, given.user ?? null, applied, versions]),
      byParser: resolved,
    };
  }

  /** The alias resolved from its group's first alias (byParser: the parser's answer for it), or undefined where that cannot be trusted. */
  derive(key: string, byParser: ResolvedHost): ResolvedHost | undefined {
    const group = this.groups.get(key);
    if (!group) return undefined;
    const out: ResolvedHost = { ...group.bySsh, alias: byParser.alias, notes: [] };
    for (const field of FIELDS) {
      // A %-token the parser left as written may stand for something that differs by alias.
      if (JSON.stringify(byParser[field] ?? null).includes('%')) return undefined;
      if (isDeepStrictEqual(byParser[field], group.byParser[field])) continue; // the same for the whole group: ssh's value
      // It follows the alias: the parser's value, where the parser gave the first alias ssh's.
      if (!isDeepStrictEqual(group.byParser[field], group.bySsh[field])) return undefined;
      (out as unknown as Record<string, unknown>)[field] = byParser[field];
    }
    return out;
  }

  /** Keeps ssh -G's answer for the group's first alias, beside the parser's. */
  remember(key: string, bySsh: ResolvedHost, byParser: ResolvedHost): void {
    if (!this.groups.has(key)) this.groups.set(key, { bySsh, byParser });
  }

  /**
   * The files ssh reads for this config, as the parser finds them, where ssh -v names the same
   * ones for an alias no config names; undefined where they differ or ssh cannot say.
   */
  private layout(ssh: string, configFile: string | false | undefined): ConfigFile[] | undefined {
    const key = JSON.stringify([ssh, configFile ?? null]);
    if (this.layouts.has(key)) return this.layouts.get(key);
    const files: ConfigFile[] =
      configFile === false
        ? []
        : configFile !== undefined
          ? [{ file: configFile, includeBase: userConfigFolder() }]
          : [
              { file: path.join(homedir(), '.ssh', 'config'), includeBase: userConfigFolder() },
              { file: SYSTEM_CONFIG, includeBase: path.dirname(SYSTEM_CONFIG) },
            ];
    const sshRead = filesSshReads(ssh, configFile);
    const parserRead = parseSshConfigFiles(PROBE_ALIAS, files).filesRead;
    const same = sshRead !== undefined && isDeepStrictEqual([...new Set(sshRead)].sort(), [...new Set(parserRead)].sort());
    this.layouts.set(key, same ? files : undefined);
    return same ? files : undefined;
  }
}

/** The config files ssh -v says it read for the probe alias, or undefined where it cannot be run. */
function filesSshReads(ssh: string, configFile: string | false | undefined): string[] | undefined {
  const args = ['-v', '-G'];
  if (configFile !== undefined) args.push('-F', configFile === false ? 'none' : configFile);
  const run = spawnSync(ssh, [...args, '--', PROBE_ALIAS], {
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: PROBE_TIMEOUT_MS,
    windowsHide: true,
  });
  if (run.error || run.status !== 0) return undefined;
  return [...run.stderr.matchAll(/^debug1: Reading configuration data (.+?)\r?$/gm)].map((match) => match[1]!);
}
