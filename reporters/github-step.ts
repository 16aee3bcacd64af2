/**
 * A GitHub Actions step as a command sees it: workflow commands (masks, groups, annotations)
 * through @actions/core (the only module that imports it), step outputs (GITHUB_OUTPUT) and the
 * job summary (GITHUB_STEP_SUMMARY). One GithubStep per command: it holds where the commands go
 * (stdout, or stderr when stdout carries a report: --json, --junit -, gha matrix's JSON; the
 * runner reads commands from both), the values it masked (replaced by *** in all it writes), and
 * what it already said about a missing file (said once on stderr and skipped, not thrown).
 */
import { existsSync, statSync } from 'node:fs';
import * as core from '@actions/core';
import { bytes, cutBytes } from './github-text.ts';

/** Masked values shorter than this are masked (::add-mask::) but not replaced in this step's text. */
const MIN_REDACTED_LENGTH = 4;
/** appendSummary never lets the summary file pass this (GitHub's 1 MiB, less a margin). */
const SUMMARY_FILE_LIMIT_BYTES = 1024 * 1024 - 64 * 1024;

/** Whether this process runs in a GitHub Actions step. */
export function isGithubActions(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.GITHUB_ACTIONS === 'true';
}

export class GithubStep {
  /** Values masked by mask(): replaced by *** in everything this step writes. */
  private readonly secrets = new Set<string>();
  /** What was already said about a missing file, so that it is said once. */
  private readonly said = new Set<string>();
  private readonly toStderr: boolean;

  /** stdoutTaken: stdout carries a report, so workflow commands go to stderr. */
  constructor(options: { stdoutTaken?: boolean } = {}) {
    this.toStderr = Boolean(options.stdoutTaken);
  }

  /**
   * Issues ::add-mask:: for each value, so that the runner prints *** wherever one would appear
   * in the log; they are also replaced in this step's summary, annotations and outputs. A value of
   * several lines is masked whole and line by line (the runner matches a mask within a line).
   */
  mask(values: readonly string[]): void {
    this.commands(() => {
      for (const value of values) {
        const lines = value
          .split(/\r?\n/)
          .map((line) => line.trim())
          .filter((line) => line && line !== value);
        for (const secret of [value, ...lines]) {
          core.setSecret(secret);
          this.secrets.add(secret);
        }
      }
    });
  }

  redact(text: string): string {
    let out = text;
    for (const secret of this.secrets) if (secret.length >= MIN_REDACTED_LENGTH) out = out.split(secret).join('***');
    return out;
  }

  /**
   * Runs `fn` (synchronous calls of this step's workflow commands) with them on stderr instead of
   * stdout where stdout is taken. @actions/core writes every command with process.stdout.write and
   * has no other stream; the swap lasts for the synchronous call only, so nothing else can write in between.
   */
  commands<T>(fn: () => T): T {
    if (!this.toStderr) return fn();
    const write = process.stdout.write;
    process.stdout.write = process.stderr.write.bind(process.stderr) as typeof write;
    try {
      return fn();
    } finally {
      process.stdout.write = write;
    }
  }

  /** An annotation; the caller bounds and redacts its text. */
  annotate(level: 'error' | 'warning', message: string, title: string): void {
    (level === 'error' ? core.error : core.warning)(message, { title });
  }

  /** A collapsible group of log lines; the caller bounds and redacts them. */
  group(title: string, lines: string[]): void {
    core.startGroup(title);
    try {
      for (const line of lines) core.info(line);
    } finally {
      core.endGroup();
    }
  }

  /** Sets step outputs (GITHUB_OUTPUT, in its name<<delimiter form); without the file, says so once and sets none. */
  setOutputs(outputs: Record<string, string>): void {
    if (!this.commandFile('GITHUB_OUTPUT', 'step outputs')) return;
    for (const [name, value] of Object.entries(outputs)) core.setOutput(name, this.redact(value));
  }

  /**
   * Appends Markdown to the job summary (GITHUB_STEP_SUMMARY); without the file, says so once and
   * writes nothing. The file never passes SUMMARY_FILE_LIMIT_BYTES: what would is cut, with a note.
   */
  async appendSummary(markdown: string): Promise<void> {
    const file = this.commandFile('GITHUB_STEP_SUMMARY', 'job summary');
    if (!file) return;
    let text = this.redact(markdown);
    const room = SUMMARY_FILE_LIMIT_BYTES - statSync(file).size;
    if (bytes(text) > room) {
      const note = `\n\n_The rest of this section is left out: the job summary would pass GitHub's limit of 1 MiB per step._\n`;
      text = `${cutBytes(text, Math.max(0, room - bytes(note)))}${note}`;
      if (bytes(text) > room)
        return this.sayOnce('summary-full', `the job summary ${file} is full (GitHub takes 1 MiB per step): a section was left out`);
    }
    await core.summary.emptyBuffer().addRaw(text, true).write();
  }

  private sayOnce(key: string, text: string): void {
    if (this.said.has(key)) return;
    this.said.add(key);
    process.stderr.write(`warning: ${text}\n`);
  }

  /** The file a GitHub file command names, or undefined (said once on stderr) when it is not set or not there. */
  private commandFile(variable: 'GITHUB_OUTPUT' | 'GITHUB_STEP_SUMMARY', what: string): string | undefined {
    const file = process.env[variable];
    if (!file) {
      this.sayOnce(
        variable,
        `GITHUB_ACTIONS is true but ${variable} is not set: writing no ${what} (the runner sets it in every step; set it to a file to get one)`,
      );
      return undefined;
    }
    if (!existsSync(file)) {
      this.sayOnce(
        variable,
        `${variable} names ${file}, which does not exist: writing no ${what} (the runner makes the file for each step)`,
      );
      return undefined;
    }
    return file;
  }
}

/**
 * A command that stops with an error (a matrix that does not load, a bad --plan) as an annotation,
 * so that the run's page shows why the step failed, not only its log. On stderr: stdout may be
 * promised to a report. Not redacted here: the command that failed masked its secrets with the
 * runner before anything ran, and the runner hides them in annotations too.
 */
export function annotateFatal(code: string, message: string): void {
  const step = new GithubStep({ stdoutTaken: true });
  step.commands(() => step.annotate('error', message, `cudamatrix: ${code}`));
}
