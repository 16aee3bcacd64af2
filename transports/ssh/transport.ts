/** The `ssh` transport's connections: one shared connection per host, closed with its last session. */
import { CudamatrixError } from '../../core/errors.ts';
import type { Connect } from '../transport.ts';
import { openConnection, type OpenedConnection } from './connect.ts';
import { resolveEndpoint } from './endpoint.ts';
import { connectOptions, type SshOptions } from './options.ts';
import { SshSession } from './session.ts';

/** Open connections, shared by the targets (and cells) on the same host, closed with the last. */
const pool = new Map<string, { connection: Promise<OpenedConnection>; refs: number }>();

function poolKey(options: SshOptions): string {
  const e = resolveEndpoint(connectOptions(options));
  return JSON.stringify([e.label, e.identityFiles, e.jumps, options.passphraseEnv ?? null]);
}

/** Opens a session on an SSH target, sharing the host's connection with its other targets. */
export const connectSsh: Connect<SshOptions> = async (options, context) => {
  if (context.via)
    throw new CudamatrixError(
      'MATRIX_INVALID',
      `target "${context.target}": ssh must be the first hop; use proxyJump to go through other hosts`,
    );
  const key = poolKey(options);
  let entry = pool.get(key);
  if (!entry) {
    entry = {
      connection: openConnection(connectOptions(options), {
        acceptNewHostKeys: context.acceptNewHostKeys,
        signal: context.signal,
        onHostKeyAdded: context.onHostKeyAdded,
      }),
      refs: 0,
    };
    pool.set(key, entry);
    entry.connection.catch(() => pool.delete(key));
  }
  entry.refs++;
  const shared = entry;
  const release = async () => {
    shared.refs--;
    if (shared.refs > 0) return;
    pool.delete(key);
    const connection = await shared.connection.catch(() => undefined);
    connection?.client.end();
    for (const j of connection?.jumps ?? []) j.end();
  };
  try {
    const { client, endpoint } = await shared.connection;
    return await SshSession.open(
      client,
      endpoint.label,
      context.runId,
      options.shell ?? 'auto',
      release,
      (options.connectTimeout ?? 15) * 1000,
    );
  } catch (error) {
    await release();
    throw error;
  }
};
