/** The `wsl` transport as the matrix knows it: its options, checked at load, and the host they reach. */
import { z } from 'zod';
import type { KindOptions } from '../transport.ts';

/** Seconds that reaching the distribution may take (listing, starting a stopped one, setting up). */
export const DEFAULT_CONNECT_TIMEOUT_S = 30;

/**
 * A distribution name as `wsl.exe --list` shows it. Names have no spaces (the list is read by
 * its columns), so one with a space, or a whole `wsl.exe` command line, is refused when the
 * matrix is loaded, saying what to write.
 */
const distributionName = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    if (/\s/.test(value)) {
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(value)} is not a WSL distribution name: names have no spaces`,
        params: { fix: 'write the name as the NAME column of "wsl.exe --list --verbose" shows it, e.g. Ubuntu-24.04' },
      });
    } else if (/^-/.test(value)) {
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(value)} is not a WSL distribution name but a wsl.exe option`,
        params: { fix: 'write the name alone, e.g. distribution: Ubuntu-24.04' },
      });
    }
  })
  .meta({ pattern: '^[^\\s-][^\\s]*$' });

export const wslOptions = z.strictObject({
  distribution: distributionName
    .optional()
    .describe('The distribution, as "wsl.exe --list --verbose" names it (default: the default one, marked * there)'),
  user: z
    .string()
    .regex(/^[^\s-][^\s]*$/, 'a Linux user name (no spaces)')
    .optional()
    .describe("Linux user to run as (wsl.exe --user; default: the distribution's default user)"),
  connectTimeout: z
    .number()
    .positive()
    .max(3600)
    .optional()
    .describe(`Seconds that listing the distributions, starting a stopped one and setting up may take (default ${DEFAULT_CONNECT_TIMEOUT_S})`),
});
export type WslOptions = z.infer<typeof wslOptions>;

export const wslKind: KindOptions<WslOptions> = {
  kind: 'wsl',
  description: "a WSL distribution of a Windows host, through wsl.exe: this machine's, or the previous hop's ([ssh, wsl])",
  options: wslOptions,
  chainable: true,
  // A distribution shares the GPU of the Windows host it runs on: alone, that is this machine;
  // in a chain, the registry takes the first hop's host.
  hostKey: () => 'local',
};
