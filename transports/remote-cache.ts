/**
 * The per-hash cache of files on a remote host (~/.cache/cudamatrix/deployed/<key>/<name> on
 * POSIX, %LOCALAPPDATA%\cudamatrix\deployed\<key>\ on Windows): a file is checked by its SHA-256
 * before use and copied only when it is missing or different, beside its place and renamed, so
 * that a reader never runs half a binary, then checked again. Each transport says how its host
 * does the steps (CacheHost); the order and the checks are here.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { CudamatrixError } from '../core/errors.ts';

export interface CacheHost {
  /** The host, for messages ("ssh gpu-box:22"). */
  readonly description: string;
  /** The cache folder for `key` (undefined when it cannot be had) and the SHA-256 of `name` in it, if there. */
  lookUp(key: string, name: string): Promise<{ dir?: string; sha?: string }>;
  /** Makes the cache folder, where lookUp did not. */
  makeDir?(dir: string): Promise<void>;
  put(localPath: string, remotePath: string, options: { executable: boolean }): Promise<void>;
  /** Renames `from` to `to`; the SHA-256 of `to` after ('' when either failed), and what the host said. */
  moveAndHash(from: string, to: string): Promise<{ sha: string; said: string }>;
  joinPath(...parts: string[]): string;
}

const SAFE = /^[A-Za-z0-9._-]+$/;

export async function installCached(
  host: CacheHost,
  localPath: string,
  key: string,
  name: string,
): Promise<{ path: string; uploaded: boolean }> {
  if (!SAFE.test(key) || !SAFE.test(name)) throw new Error(`bad cache key ${key}/${name}`);
  const sha = createHash('sha256')
    .update(await readFile(localPath))
    .digest('hex');
  const { dir, sha: cached } = await host.lookUp(key, name);
  if (!dir) throw new CudamatrixError('TRANSPORT_FAILED', `could not prepare the probe cache on ${host.description}`);
  const target = host.joinPath(dir, name);
  if (cached && cached.trim().toLowerCase() === sha) return { path: target, uploaded: false };
  await host.makeDir?.(dir);
  const partial = `${target}.upload-${randomBytes(4).toString('hex')}`;
  await host.put(localPath, partial, { executable: true });
  const placed = await host.moveAndHash(partial, target);
  if (placed.sha.toLowerCase() !== sha) {
    throw new CudamatrixError(
      'TRANSPORT_FAILED',
      `the probe copied to ${host.description}:${target} does not verify (${placed.said || 'hash differs'})`,
    );
  }
  return { path: target, uploaded: true };
}
