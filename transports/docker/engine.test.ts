import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers.ts';
import { resolveEngine } from './engine.ts';

const saved = { ...process.env };
beforeEach(() => {
  for (const k of ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH']) delete process.env[k];
  process.env.DOCKER_CONFIG = tempDir('cm-dockercfg-');
});
afterEach(() => {
  process.env = { ...saved };
});

/** A context as the Docker CLI stores it: meta.json and TLS files under the sha256 of its name. */
function writeContext(name: string, host: string, tls = false): void {
  const id = createHash('sha256').update(name).digest('hex');
  const meta = path.join(process.env.DOCKER_CONFIG!, 'contexts', 'meta', id);
  mkdirSync(meta, { recursive: true });
  writeFileSync(
    path.join(meta, 'meta.json'),
    JSON.stringify({ Name: name, Metadata: {}, Endpoints: { docker: { Host: host, SkipTLSVerify: false } } }),
  );
  if (tls) {
    const dir = path.join(process.env.DOCKER_CONFIG!, 'contexts', 'tls', id, 'docker');
    mkdirSync(dir, { recursive: true });
    for (const fileName of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(path.join(dir, fileName), `${fileName} of ${name}`);
  }
}

describe('Docker engine resolution, as the Docker CLI does it', () => {
  it('defaults to the local socket', () => {
    expect(resolveEngine({})).toMatchObject({
      endpoint: 'unix:///var/run/docker.sock',
      source: 'default',
      options: { socketPath: '/var/run/docker.sock' },
    });
  });

  it('takes DOCKER_HOST, with TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH', () => {
    process.env.DOCKER_HOST = 'tcp://gpu-node:2376';
    const plain = resolveEngine({});
    expect(plain).toMatchObject({ source: 'DOCKER_HOST', options: { host: 'gpu-node', port: 2376, protocol: 'http' } });
    const certs = tempDir();
    for (const fileName of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(path.join(certs, fileName), fileName);
    process.env.DOCKER_TLS_VERIFY = '1';
    process.env.DOCKER_CERT_PATH = certs;
    const tls = resolveEngine({});
    expect(tls.options).toMatchObject({ protocol: 'https', host: 'gpu-node', port: 2376 });
    expect(String(tls.options.ca)).toBe('ca.pem');
    expect(String(tls.options.cert)).toBe('cert.pem');
  });

  it("takes DOCKER_CONTEXT, then the current context of config.json, with the context's TLS files", () => {
    writeContext('lab', 'tcp://lab-gpu:2376', true);
    writeContext('other', 'unix:///run/other.sock');
    writeFileSync(path.join(process.env.DOCKER_CONFIG!, 'config.json'), JSON.stringify({ currentContext: 'other' }));
    expect(resolveEngine({})).toMatchObject({ source: 'context other', options: { socketPath: '/run/other.sock' } });
    process.env.DOCKER_CONTEXT = 'lab';
    const lab = resolveEngine({});
    expect(lab).toMatchObject({ endpoint: 'tcp://lab-gpu:2376', source: 'context lab', options: { protocol: 'https', host: 'lab-gpu' } });
    expect(String(lab.options.key)).toBe('key.pem of lab');
  });

  it('lets the matrix win: an endpoint, or a context', () => {
    process.env.DOCKER_HOST = 'tcp://ignored:2375';
    writeContext('lab', 'ssh://ops@lab-gpu:2222');
    expect(resolveEngine({ endpoint: 'unix:///tmp/x.sock' })).toMatchObject({ source: 'matrix', options: { socketPath: '/tmp/x.sock' } });
    expect(resolveEngine({ context: 'lab' }).options).toMatchObject({ protocol: 'ssh', host: 'lab-gpu', port: 2222, username: 'ops' });
  });

  it('says what is wrong with a bad endpoint or an unknown context', () => {
    expect(() => resolveEngine({ endpoint: 'ftp://x' })).toThrow(/unknown scheme; use unix:\/\/, tcp:\/\/, ssh:\/\/ or npipe:\/\//);
    expect(() => resolveEngine({ endpoint: 'not a url' })).toThrow(/is not a URL/);
    expect(() => resolveEngine({ context: 'nope' })).toThrow(/Docker context "nope" does not exist .*docker context ls/);
  });
});
