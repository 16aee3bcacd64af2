/** The `wsl` transport as the rest of cudamatrix knows it (transports/transport.ts says what each entry is for). */
import type { TransportKind } from '../transport.ts';
import { wslOptions, type WslOptions } from './options.ts';

export const wsl: TransportKind<WslOptions> = {
  description: "a WSL distribution of a Windows host, through wsl.exe: this machine's, or the previous hop's ([ssh, wsl])",
  options: wslOptions,
  chainable: true,
  // A distribution shares the GPU of the Windows host it runs on: alone, that is this machine;
  // in a chain, the registry takes the first hop's host.
  hostKey: () => 'local',
  reached: 'connected',
  load: async () => (await import('./transport.ts')).connectWsl,
};
