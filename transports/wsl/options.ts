/** The `wsl` transport's options, checked when the matrix is loaded (the kind is in ./kind.ts). */
import { z } from 'zod';

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
    .describe(
      `Seconds that listing the distributions, starting a stopped one and setting up may take (default ${DEFAULT_CONNECT_TIMEOUT_S})`,
    ),
});
export type WslOptions = z.infer<typeof wslOptions>;
