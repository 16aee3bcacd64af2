/**
 * Runs before every test file (vitest setupFiles). Puts the file's temp folders in the suite's
 * own temp dir (made by test/global-setup.ts, which checks at the end that nothing was left
 * there), and removes the folders tempDir() made once the file is done. Its afterAll runs
 * after the test file's own (hooks run as a stack), so servers and runs that used the folders
 * have stopped by then.
 */
import { afterAll, inject } from 'vitest';
import { removeTempDirs } from './helpers.ts';

const suiteTmp = inject('suiteTmpDir');
// os.tmpdir() follows TMPDIR, here and in every child the tests start (CLI runs, sshd).
if (suiteTmp) process.env.TMPDIR = suiteTmp;

afterAll(async () => {
  await removeTempDirs();
});
