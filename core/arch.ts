/**
 * cudamatrix's name for a machine architecture (x86_64, aarch64: uname -m's), from the way
 * uname -m, Node.js (process.arch), a Docker engine or Windows (PROCESSOR_ARCHITECTURE) spell
 * it. Another architecture keeps its name (no cudaprobe is built for it; binaryFor says so).
 */
export function normaliseArch(name: string): string {
  const n = name.trim().toLowerCase();
  if (n === 'x86_64' || n === 'amd64' || n === 'x64') return 'x86_64';
  if (n === 'aarch64' || n === 'arm64') return 'aarch64';
  return name;
}
