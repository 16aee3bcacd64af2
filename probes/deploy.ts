/** Puts the right cudaprobe binary on a target, through the target's session. */
import type { Platform, Session } from '../transports/transport.ts';
import type { ProbeBinary } from './build.ts';
import { probeBinary } from './binary.ts';

export interface DeployedProbe {
  binary: ProbeBinary;
  /** Where the binary is on the target. */
  remotePath: string;
  /** Whether it was copied to the target this time (false: the target's cache had it). */
  uploaded: boolean;
}

export type BuildFor = (platform: Platform, arch: string) => Promise<ProbeBinary>;

/** Takes the binary for the session's platform (prebuilt, cached or compiled) and uploads it. */
export async function deployProbe(
  session: Session,
  build: BuildFor = (platform, arch) => probeBinary({ platform, arch }),
): Promise<DeployedProbe> {
  const binary = await build(session.platform, session.arch);
  const name = session.platform === 'windows' ? 'cudaprobe.exe' : 'cudaprobe';
  if (session.installCached) {
    const cached = await session.installCached(binary.path, `${session.platform}-${session.arch}-${binary.hash}`, name);
    return { binary, remotePath: cached.path, uploaded: cached.uploaded };
  }
  const remotePath = session.joinPath(session.workDir, name);
  await session.put(binary.path, remotePath, { executable: true });
  return { binary, remotePath, uploaded: true };
}
