/** ssh_config resolved by OpenSSH's ssh -G, and the fallback parser held against it. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandsAvailable, tempDir } from '../../test/helpers.ts';
import { resolveEndpoint } from './endpoint.ts';
import { parseSshConfig, type GivenOptions, type ResolvedHost } from './ssh-config.ts';
import { resolveSshConfig, resolveWithOpenSsh } from './ssh-config-resolve.ts';

const haveSsh = commandsAvailable('ssh -G', { ssh: 'openssh-client' });

/** Writes the files (name -> lines) into a fresh folder; "$dir" in a line is that folder. */
function files(contents: Record<string, string[]>): string {
  const dir = tempDir('cm-sshconfig-');
  for (const [name, lines] of Object.entries(contents))
    writeFileSync(path.join(dir, name), lines.join('\n').replaceAll('$dir', dir) + '\n');
  return dir;
}

/** What the transport takes from a resolution, with the defaults it fills in (endpoint.ts). */
function used(resolved: ResolvedHost, given: GivenOptions) {
  return {
    hostName: resolved.hostName.toLowerCase(), // ssh lower-cases it; names are case-blind
    port: given.port ?? resolved.port ?? 22,
    user: given.user ?? resolved.user ?? userInfo().username,
    identityFiles: resolved.identityFiles,
    proxyJump: resolved.proxyJump,
    userKnownHostsFiles: resolved.userKnownHostsFiles,
  };
}

/** Configs whose every alias the parser must resolve as ssh -G does. */
const cases: { name: string; files: Record<string, string[]>; aliases: string[]; given?: GivenOptions }[] = [
  {
    name: 'Include inside a matching Host block applies the included options',
    files: { config: ['Host gpu', '  Include $dir/inc', '  Port 2200'], inc: ['HostName inc.example', 'User from-include'] },
    aliases: ['gpu', 'other'],
  },
  {
    name: 'Include inside a Host block that does not match applies nothing',
    files: { config: ['Host elsewhere', '  Include $dir/inc', 'Host *', '  User everyone'], inc: ['HostName wrong.example', 'Port 1'] },
    aliases: ['gpu', 'elsewhere'],
  },
  {
    name: "Include inside a Host block that does not match: the included file's Host lines never match",
    files: { config: ['Host elsewhere', '  Include $dir/inc'], inc: ['Host *', '  HostName wrong.example', '  IdentityFile ~/.ssh/wrong'] },
    aliases: ['gpu', 'elsewhere'],
  },
  {
    name: "after an Include, the including block's state comes back",
    files: {
      config: ['Host gpu', '  Include $dir/inc', '  User after-include', '  IdentityFile ~/.ssh/after_%r_%p'],
      inc: ['Host nothing-here', '  Port 1'],
    },
    aliases: ['gpu', 'nothing-here', 'other'],
  },
  {
    name: "each file an Include names starts in the including block's state",
    files: {
      config: ['Host gpu', '  Include $dir/one $dir/two'],
      one: ['Host elsewhere', '  Port 1'],
      two: ['Port 2202', 'User from-two'],
    },
    aliases: ['gpu', 'elsewhere'],
  },
  {
    name: 'Include at the top level with Host blocks and a glob',
    files: {
      config: ['Include $dir/conf.*', 'Host *', '  UserKnownHostsFile ~/.ssh/lab_known_hosts'],
      'conf.a': ['Host a-*', '  HostName %h.lab.example', '  ProxyJump jump@bastion.example:2222'],
      'conf.b': ['Host a-1', '  HostName first-wins.example', '  Port 2201'],
    },
    aliases: ['a-1', 'a-2', 'b'],
  },
  {
    name: 'patterns, negation, first value wins, IdentityFile adds up, tokens',
    files: {
      config: [
        'IdentityFile ~/.ssh/global_key',
        'Host gpu gpu-* !gpu-secret',
        '  HostName %h.lab.example',
        '  User engineer',
        '  IdentityFile %d/keys/%r@%h:%p',
        'Host gpu-7',
        '  Port 9999',
        '  User someone-else',
        'Host *',
        '  User = fallback',
        '  ProxyJump none',
      ],
    },
    aliases: ['gpu', 'gpu-7', 'gpu-secret', 'x'],
  },
  {
    name: "the target's own port and user go into the tokens, as ssh's -p and -l",
    files: { config: ['Host gpu', '  IdentityFile ~/.ssh/k_%r_%p', '  Port 2200'] },
    aliases: ['gpu'],
    given: { port: 2022, user: 'bob' },
  },
];

describe.runIf(haveSsh)('ssh_config resolved by ssh -G, and the fallback parser against it', () => {
  for (const testCase of cases) {
    it(`the parser agrees with ssh -G: ${testCase.name}`, () => {
      const config = path.join(files(testCase.files), 'config');
      for (const alias of testCase.aliases) {
        const openssh = resolveWithOpenSsh(alias, config, testCase.given);
        expect(openssh, 'ssh -G ran').toBeDefined();
        expect({ alias, ...used(parseSshConfig(alias, config, testCase.given), testCase.given ?? {}) }).toEqual({
          alias,
          ...used(openssh!, testCase.given ?? {}),
        });
      }
    });
  }

  /** A stand-in ssh that logs its arguments and runs the real one: how many times ssh -G resolved an alias. */
  function countingSsh(): { ssh: string; resolutions: () => string[] } {
    const dir = tempDir('cm-ssh-count-');
    const log = path.join(dir, 'calls');
    const ssh = path.join(dir, 'ssh');
    writeFileSync(ssh, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec ssh "$@"\n`, { mode: 0o755 });
    const resolutions = () =>
      (existsSync(log) ? readFileSync(log, 'utf8') : '')
        .split('\n')
        .filter((line) => line && !line.startsWith('-v ') && !line.includes('cudamatrix-defaults'));
    return { ssh, resolutions };
  }

  const fleet = Array.from({ length: 8 }, (_, i) => `gpu-${i}`);
  const fleetCases: { name: string; config: string[]; aliases: string[]; sshRuns: number }[] = [
    {
      name: 'aliases the same lines apply to share one ssh -G; %h and an unset HostName follow each alias',
      config: ['Host gpu-*', '  HostName %h.lab.example', '  User ci', '  IdentityFile ~/.ssh/k_%h_%r', 'Host gpu-3', '  Port 2203'],
      aliases: [...fleet, 'other', 'other-2'],
      sshRuns: 3, // gpu-* but gpu-3, gpu-3, the others
    },
    {
      name: 'a Match block anywhere: every alias its own ssh -G',
      config: ['Host gpu-*', '  User ci', 'Match originalhost gpu-5', '  Port 2205'],
      aliases: fleet,
      sshRuns: fleet.length,
    },
    {
      name: 'a token the parser leaves as written (%n): every alias its own ssh -G',
      config: ['Host gpu-*', '  IdentityFile ~/.ssh/k_%n'],
      aliases: fleet,
      sshRuns: fleet.length,
    },
    {
      name: 'a HostName without tokens is shared; an alias in capitals has its own ssh -G',
      config: ['Host gpu-*', '  HostName one-box.lab.example', '  Port 2200'],
      aliases: [...fleet, 'GPU-9'],
      sshRuns: 2,
    },
  ];
  for (const testCase of fleetCases) {
    it(`a fleet's aliases are resolved as ssh -G resolves each: ${testCase.name}`, () => {
      const config = path.join(files({ config: testCase.config }), 'config');
      const { ssh, resolutions } = countingSsh();
      const given = { user: 'ci' };
      const shared = testCase.aliases.map((alias) => resolveSshConfig(alias, config, given, ssh));
      expect(resolutions()).toHaveLength(testCase.sshRuns);
      expect(shared).toEqual(testCase.aliases.map((alias) => resolveWithOpenSsh(alias, config, given)));
    });
  }

  it('resolves with ssh -G where ssh is on PATH: Match blocks apply, which the parser leaves out', () => {
    const config = path.join(files({ config: ['Match originalhost gpu-m', '  HostName matched.example', '  Port 2201'] }), 'config');
    expect(resolveEndpoint({ host: 'gpu-m', sshConfig: config })).toMatchObject({ host: 'matched.example', port: 2201 });
    const parsed = resolveSshConfig('gpu-m', config, {}, path.join(tempDir(), 'no-such-ssh'));
    expect(parsed).toMatchObject({ hostName: 'gpu-m', port: undefined });
    expect(parsed.notes[0]).toMatch(/:1: Match blocks are not evaluated/);
  });

  it("keeps the transport's defaults where the config sets no key or known_hosts file", () => {
    const e = resolveEndpoint({ host: 'h', sshConfig: false });
    expect(e).toMatchObject({ host: 'h', port: 22, user: userInfo().username, jumps: [] });
    expect(e.identityFiles).toEqual(['id_ed25519', 'id_ecdsa', 'id_rsa'].map((fileName) => path.join(homedir(), '.ssh', fileName)));
    expect(e.knownHostsFiles).toEqual([path.join(homedir(), '.ssh', 'known_hosts')]);
  });

  it('says which ssh_config OpenSSH refuses, and why', () => {
    const config = path.join(files({ config: ['Host gpu', '  HostName gpu.example', '  NoSuchOption yes'] }), 'config');
    expect(() => resolveEndpoint({ host: 'gpu', sshConfig: config })).toThrow(
      expect.objectContaining({
        code: 'MATRIX_INVALID',
        message: expect.stringMatching(
          new RegExp(`^ssh_config ${config}: OpenSSH cannot read it for host "gpu": .*line 3: Bad configuration option: nosuchoption`),
        ),
      }),
    );
  });
});
