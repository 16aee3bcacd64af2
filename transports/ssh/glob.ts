/** OpenSSH's host patterns: * and ? are wildcards, everything else (brackets too) is literal. */
export function sshGlob(pattern: string): RegExp {
  // Made once per pattern: a fleet's aliases are matched against the same few Host lines.
  let compiled = compiledPatterns.get(pattern);
  if (!compiled) {
    const re = pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.');
    compiled = new RegExp(`^${re}$`, 'i');
    compiledPatterns.set(pattern, compiled);
  }
  return compiled;
}

const compiledPatterns = new Map<string, RegExp>();
