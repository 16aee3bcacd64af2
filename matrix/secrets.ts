/**
 * What is a secret: the keys the matrix refuses to hold (SECRET_KEYS; the matrix names where
 * secrets are instead, identityFile and passphraseEnv), and the environment variables whose
 * values are masked in a GitHub Actions step (secretValues).
 */

/** Keys whose value in a matrix would be a secret written in it. */
export const SECRET_KEYS = /^(password|passwd|passphrase|private[_-]?key|secret|token|api[_-]?key)$/i;

/**
 * Names of environment variables whose values are secrets by their name: a TOKEN, SECRET,
 * PASSWORD, PASSPHRASE, CREDENTIALS or a KEY of a secret kind, as a whole word of the name
 * (GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY, SSH_PRIVATE_KEY). A name that goes on past
 * the word names something about the secret, not the secret (PASSWORD_FILE, TOKEN_URL).
 */
const SECRET_NAME =
  /(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|(?:PRIVATE|API|ACCESS|SECRET|SIGNING|CLIENT|ENCRYPTION)_?KEY)$/i;

/**
 * The distinct non-empty values of the variables `names` (the matrix's passphraseEnv) and of
 * every variable whose name says it holds a secret (SECRET_NAME), in the order they are named.
 */
export function secretValues(env: NodeJS.ProcessEnv, names: string[]): string[] {
  const chosen = new Set([...names, ...Object.keys(env).filter((variableName) => SECRET_NAME.test(variableName))]);
  const values = new Set<string>();
  for (const name of chosen) {
    const value = env[name];
    if (value) values.add(value);
  }
  return [...values];
}
