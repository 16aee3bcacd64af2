/**
 * Why salloc gave no job, as the user can act on it: salloc's own words (never the command line:
 * its lifeline is an internal script), what the job asked for, and the fix. A cluster whose
 * authentication (munge) or controller (slurmctld) is down is the cluster's failure, not the matrix's.
 */
import { CudamatrixError } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import { StreamEndedError } from '../stream.ts';
import { DEFAULT_GRES, type SlurmOptions } from './options.ts';

/** salloc's error lines, less their "salloc: error: " prefix (the start of them when there are many). */
export function sallocWords(stderr: string): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  const errors = lines
    .filter((line) => /^(salloc|srun): (error|fatal): /.test(line))
    .map((line) => line.replace(/^(salloc|srun): (error|fatal): /, ''))
    // Slurm's own trace lines ("slurm_send_node_msg: auth_g_create: ...") and its advice to
    // restart munged with more threads (when it is not running at all) tell the user nothing.
    .filter((line) => !/^[a-z_]+: [a-z_]+: /.test(line) && !/^If munged is up, restart with/.test(line));
  return oneLine((errors.length ? errors : lines).join('\n'), { max: 400 });
}

/** What salloc was asked for, in its options (the defaults named): "--gres=gpu:1 (gres's default), the cluster's default partition". */
export function askedFor(options: SlurmOptions): string {
  const gres = options.gres ?? DEFAULT_GRES;
  return [
    'one node, one task',
    gres === 'none' ? 'no GRES (gres: none)' : `--gres=${gres}${options.gres === undefined ? " (gres's default)" : ''}`,
    options.partition ? `--partition=${options.partition}` : "the cluster's default partition",
    ...(options.account ? [`--account=${options.account}`] : []),
    ...(options.qos ? [`--qos=${options.qos}`] : []),
    ...(options.constraint ? [`--constraint=${options.constraint}`] : []),
    ...(options.nodelist ? [`--nodelist=${options.nodelist}`] : []),
    ...(options.timeLimit ? [`--time=${options.timeLimit}`] : []),
  ].join(', ');
}

/** The fix for a refusal, by what salloc named. */
function fixFor(words: string, slurmOptions: SlurmOptions): string {
  const gresFix =
    slurmOptions.gres === undefined
      ? `set the target's gres to what its nodes have (gpu:1 is asked for by default; gres: none asks for no GPU)`
      : `set the target's gres to what its nodes have (gres: none asks for no GPU)`;
  if (/partition/i.test(words)) return `set the target's partition to one that "sinfo -s" lists, or leave it out for the cluster's default`;
  if (/account/i.test(words)) return `set the target's account to one that "sacctmgr show assoc user=$USER" lists for you`;
  if (/qos/i.test(words)) return `set the target's qos to one that "sacctmgr show assoc user=$USER format=account,qos" allows you`;
  if (/node configuration is not available|gres|generic resource|feature|constraint|node name|nodelist/i.test(words))
    return `no node of the partition has all it asks for: "sinfo -N -o '%N %P %G %f'" lists each node's partition, GRES and features; ${gresFix}, or change its constraint or nodelist`;
  return `check the target's partition, account, qos, gres, constraint and nodelist against "sinfo" and "sacctmgr show assoc user=$USER"; ${gresFix}`;
}

/**
 * The error for a salloc that gave no job: SLURM_NOT_FOUND, SLURM_AUTH_FAILED,
 * SLURM_CONTROLLER_UNREACHABLE, SLURM_JOB_ENDED (cancelled while it waited) or SLURM_JOB_REFUSED.
 */
export function sallocFailed(where: string, options: SlurmOptions, error: unknown, job: { target: string; name: string }): CudamatrixError {
  const stderr = error instanceof StreamEndedError ? error.stderr : error instanceof Error ? error.message : String(error);
  const notThere =
    (error instanceof StreamEndedError && error.code === 127) ||
    (/ENOENT|not found|No such file/i.test(stderr) && !/salloc: error/.test(stderr));
  const words = sallocWords(stderr) || (error instanceof StreamEndedError ? `salloc exited ${error.code ?? error.signal}` : '');
  if (notThere) {
    return new CudamatrixError(
      'SLURM_NOT_FOUND',
      `salloc is not on PATH on ${where}: run cudamatrix on a login node of the cluster (with Slurm's client tools), or reach one first: transport: [{kind: ssh, host: login1}, {kind: slurm}] (${words})`,
    );
  }
  if (/munge|authentication/i.test(words)) {
    return new CudamatrixError(
      'SLURM_AUTH_FAILED',
      `Slurm's authentication (munge) failed on ${where}: salloc could not have its request signed or accepted (${words}). Start munged there ("systemctl start munge"; slurm.conf's AuthInfo names its socket if not the default) and check that /etc/munge/munge.key is the cluster's ("munge -n | unmunge" on the login node tests it)`,
    );
  }
  if (/Unable to contact slurm controller|slurmctld.*(not responding|unreachable)/i.test(words)) {
    return new CudamatrixError(
      'SLURM_CONTROLLER_UNREACHABLE',
      `Slurm's controller (slurmctld) did not answer salloc on ${where}: ${words}. Check that slurmctld runs ("scontrol ping" on the login node says UP or DOWN) and that the login node reaches SlurmctldHost:SlurmctldPort of slurm.conf`,
    );
  }
  // The job was let in and then ended before it started: cancelled while it waited in the queue.
  if (/already completing or completed|has been revoked|cancelled|canceled/i.test(words)) {
    return new CudamatrixError(
      'SLURM_JOB_ENDED',
      `target "${job.target}": Slurm job ${job.name} ended before it started: cancelled from outside (scancel), or by the cluster, while it waited (salloc on ${where} said: ${words}); "sacct --name=${job.name}" says who and when`,
    );
  }
  return new CudamatrixError(
    'SLURM_JOB_REFUSED',
    `Slurm refused the job (salloc on ${where}): ${words}. It asked for ${askedFor(options)}. Fix: ${fixFor(words, options)}`,
  );
}
