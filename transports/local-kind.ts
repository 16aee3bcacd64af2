/** The `local` transport as the rest of cudamatrix knows it (transports/transport.ts says what each entry is for). */
import { z } from 'zod';
import type { TransportKind } from './transport.ts';

export const local: TransportKind<object> = {
  description: 'this machine: probes run as child processes',
  options: z.strictObject({}),
  chainable: false,
  reached: 'this machine: probes run here as child processes',
  load: async () => (await import('./local.ts')).connectLocal,
};
