/** OpenSSH's host patterns: * and ? are wildcards, everything else (brackets too) is literal. */
export function sshGlob(pattern: string): RegExp {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`, 'i');
}
