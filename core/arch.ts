/**
 * cudamatrix's name for a machine architecture (x86_64, aarch64: uname -m's), from the way
 * uname -m, Node.js (process.arch), a Docker engine or Windows (PROCESSOR_ARCHITECTURE) spell
 * it. Another architecture keeps its name (no cudaprobe is built for it; binaryFor says so).
 */
export function normaliseArch(name: string): string {
  const normalized = name.trim().toLowerCase();
  if (normalized === 'x86_64' || normalized === 'amd64' || normalized === 'x64') return 'x86_64';
  if (normalized === 'aarch64' || normalized === 'arm64') return 'aarch64';
  return name;
}
