import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers.ts';
import { parseJumpHop, parseSshConfig } from './ssh-config.ts';

function config(text: string): string {
  const dir = tempDir();
  const file = path.join(dir, 'config');
  writeFileSync(file, text);
  return file;
}

describe('ssh_config, read by the fallback parser', () => {
  const file = config(
    [
      '# global options first apply to every host',
      'IdentityFile ~/.ssh/global_key',
      '',
      'Host gpu gpu-*',
      '  HostName %h.lab.example',
      '  User engineer',
      '  Port 2200',
      '  IdentityFile ~/.ssh/lab_%r',
      '  ProxyJump bastion@jump.example:2222',
      '',
      'Host gpu-7',
      '  Port 9999',
      '  User someone-else',
      '',
      'Host *.lab.example !secret.lab.example',
      '  UserKnownHostsFile ~/.ssh/lab_known_hosts',
      '',
      'Match host foo',
      '  User matched',
      '',
      'Host *',
      '  User = fallback',
      '  IdentitiesOnly yes',
    ].join('\n'),
  );

  it('resolves an alias: the first value wins, IdentityFile adds up, tokens and ~ expand', () => {
    const resolved = parseSshConfig('gpu-7', file);
    expect(resolved.hostName).toBe('gpu-7.lab.example');
    expect(resolved.port).toBe(2200);
    expect(resolved.user).toBe('engineer');
    expect(resolved.identityFiles).toEqual([path.join(homedir(), '.ssh/global_key'), path.join(homedir(), '.ssh/lab_engineer')]);
    expect(resolved.proxyJump).toBe('bastion@jump.example:2222');
    expect(resolved.identitiesOnly).toBe(true);
  });

  it('falls back to Host * and says a Match block was not applied', () => {
    const resolved = parseSshConfig('other', file);
    expect(resolved).toMatchObject({ hostName: 'other', user: 'fallback', port: undefined, proxyJump: undefined });
    expect(resolved.notes[0]).toMatch(/:18: Match blocks are not evaluated/);
  });

  it('matches patterns against the alias as given, with negation', () => {
    expect(parseSshConfig('x.lab.example', file).userKnownHostsFiles).toEqual([path.join(homedir(), '.ssh/lab_known_hosts')]);
    expect(parseSshConfig('secret.lab.example', file).userKnownHostsFiles).toEqual([]);
  });

  it('follows Include, relative to ~/.ssh or absolute, with globs', () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'conf.d'));
    writeFileSync(path.join(dir, 'conf.d', 'a.conf'), 'Host inc\n  HostName included.example\n');
    const main = path.join(dir, 'config');
    writeFileSync(main, `Include ${path.join(dir, 'conf.d', '*.conf')}\n`);
    expect(parseSshConfig('inc', main).hostName).toBe('included.example');
  });

  it('reads nothing when there is no config (or it is switched off)', () => {
    expect(parseSshConfig('h', false)).toMatchObject({ hostName: 'h', identityFiles: [] });
    expect(parseSshConfig('h', '/nonexistent/config').hostName).toBe('h');
  });

  it('parses ProxyJump hops', () => {
    expect(parseJumpHop('bastion')).toEqual({ host: 'bastion', user: undefined, port: undefined });
    expect(parseJumpHop('me@jump:2222')).toEqual({ user: 'me', host: 'jump', port: 2222 });
    expect(parseJumpHop('[::1]:22')).toEqual({ user: undefined, host: '::1', port: 22 });
  });

  it('expands %u and %d', () => {
    const configPath = config('Host t\n  IdentityFile %d/keys/%u\n');
    expect(parseSshConfig('t', configPath).identityFiles).toEqual([path.join(homedir(), 'keys', userInfo().username)]);
  });
});
