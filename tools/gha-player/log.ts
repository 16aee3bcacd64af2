/**
 * The runner's side of a step's output, for the workflow player (player.ts): workflow
 * commands read from stdout and stderr lines (annotations, groups, masks, debug, stop-commands,
 * the deprecated set-output), the log as GitHub shows it (commands rendered as `##[error]`,
 * `##[group]`..., masked values as ***), GitHub's annotation limits, and the file commands
 * (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH) a step leaves behind.
 */

export type AnnotationLevel = 'error' | 'warning' | 'notice';

export interface Annotation {
  level: AnnotationLevel;
  message: string;
  title?: string;
  file?: string;
  line?: number;
  endLine?: number;
  col?: number;
  endColumn?: number;
  /** The id of the step that made it. */
  step: string;
}

export interface LogGroup {
  step: string;
  title: string;
  lines: string[];
}

/**
 * GitHub keeps at most 10 annotations of each level per step and 50 per job; the lines stay in the
 * log, the rest are not annotations (counted in JobLog.droppedAnnotations).
 */
export const ANNOTATIONS_PER_STEP_PER_LEVEL = 10;
export const ANNOTATIONS_PER_JOB = 50;

/** Values replaced by *** wherever the log shows text (secrets, ::add-mask:: values). */
export class Masker {
  private values: string[] = [];

  add(value: string): void {
    // A multi-line value is masked whole and line by line, as the runner does for secrets.
    for (const part of [value, ...value.split(/\r?\n/)]) {
      if (part.trim() !== '' && !this.values.includes(part)) this.values.push(part);
    }
    this.values.sort((left, right) => right.length - left.length); // the longest first: no half-masked value
  }

  apply(text: string): string {
    let out = text;
    for (const secret of this.values) out = out.split(secret).join('***');
    return out;
  }

  /** Whether the text holds a masked value (GitHub then drops it from a job's outputs). */
  hits(text: string): boolean {
    return this.values.some((secret) => text.includes(secret));
  }
}

// --- workflow commands ------------------------------------------------------------------------

export interface WorkflowCommand {
  name: string;
  properties: Record<string, string>;
  data: string;
}

const REGISTERED = new Set([
  'error',
  'warning',
  'notice',
  'group',
  'endgroup',
  'add-mask',
  'debug',
  'stop-commands',
  'set-output',
  'save-state',
  'echo',
]);

const PROPERTY_ESCAPES: Record<string, string> = { '%25': '%', '%0D': '\r', '%0A': '\n', '%3A': ':', '%2C': ',' };

/** Reverses @actions/core's escaping: data has %25 %0D %0A, properties also %3A %2C. One pass, so %250A stays %0A. */
function unescape(text: string, property: boolean): string {
  return text.replace(property ? /%(25|0D|0A|3A|2C)/gi : /%(25|0D|0A)/gi, (escape) => PROPERTY_ESCAPES[escape.toUpperCase()] ?? escape);
}

/**
 * `::name key=value,key=value::data` (leading blanks allowed, as the runner trims them), or
 * undefined for a line that is not a command the runner knows (printed as it is).
 */
export function parseWorkflowCommand(line: string): WorkflowCommand | undefined {
  const text = line.trimStart();
  if (!text.startsWith('::')) return undefined;
  const end = text.indexOf('::', 2);
  if (end < 0) return undefined;
  const info = text.slice(2, end);
  const space = info.indexOf(' ');
  const name = (space < 0 ? info : info.slice(0, space)).toLowerCase();
  if (!REGISTERED.has(name)) return undefined;
  const properties: Record<string, string> = {};
  if (space >= 0) {
    for (const pair of info.slice(space + 1).split(',')) {
      const eq = pair.indexOf('=');
      if (eq > 0) properties[pair.slice(0, eq).trim()] = unescape(pair.slice(eq + 1), true);
    }
  }
  return { name, properties, data: unescape(text.slice(end + 2), false) };
}

/** The whole job's log, its annotations and groups; StepLog writes into it. */
export class JobLog {
  readonly lines: string[] = [];
  readonly annotations: Annotation[] = [];
  readonly groups: LogGroup[] = [];
  droppedAnnotations = 0;
  readonly masker = new Masker();

  constructor(readonly debug: boolean) {}

  /** A step's log; a composite action's step also writes into the log of the step that called it. */
  step(stepId: string, parent?: StepLog): StepLog {
    return new StepLog(this, stepId, parent);
  }
}

/** One step's log: lines from its processes (commands applied) and the runner's own lines. */
export class StepLog {
  readonly lines: string[] = [];
  /** Outputs set by the deprecated ::set-output (the GITHUB_OUTPUT file wins over them). */
  readonly commandOutputs: Record<string, string> = {};
  private group: LogGroup | undefined;
  private stopToken: string | undefined;
  private perLevel: Record<AnnotationLevel, number> = { error: 0, warning: 0, notice: 0 };

  constructor(
    private readonly job: JobLog,
    readonly stepId: string,
    private readonly parent?: StepLog,
  ) {}

  /** A line as the log shows it: masked, in this step, in the job, in the open group. */
  write(text: string): void {
    for (const line of this.job.masker.apply(text).split('\n')) {
      for (let stepLog: StepLog | undefined = this; stepLog; stepLog = stepLog.parent) stepLog.lines.push(line);
      this.job.lines.push(line);
      this.group?.lines.push(line);
    }
  }

  /** A runner's own debug line: written only when the job's log shows debug lines. */
  debug(text: string): void {
    if (this.job.debug) this.write(`##[debug]${text}`);
  }

  /** An annotation (and its `##[level]` line), within GitHub's limits. */
  annotate(level: AnnotationLevel, message: string, properties: Record<string, string> = {}): void {
    const mask = (text: string) => this.job.masker.apply(text);
    this.write(`##[${level}]${message}`);
    if (this.perLevel[level] >= ANNOTATIONS_PER_STEP_PER_LEVEL || this.job.annotations.length >= ANNOTATIONS_PER_JOB) {
      this.job.droppedAnnotations++;
      return;
    }
    this.perLevel[level]++;
    const num = (propertyValue: string | undefined) =>
      propertyValue !== undefined && /^\d+$/.test(propertyValue) ? Number(propertyValue) : undefined;
    const annotation: Annotation = { level, message: mask(message), step: this.stepId };
    if (properties.title !== undefined) annotation.title = mask(properties.title);
    if (properties.file !== undefined) annotation.file = properties.file;
    for (const [key, value] of [
      ['line', num(properties.line)],
      ['endLine', num(properties.endLine)],
      ['col', num(properties.col)],
      ['endColumn', num(properties.endColumn)],
    ] as const) {
      if (value !== undefined) annotation[key] = value;
    }
    this.job.annotations.push(annotation);
  }

  /** A line the step's process printed on stdout or stderr. */
  processLine(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (this.stopToken !== undefined) {
      // Commands are off until `::<token>::` (::stop-commands::), which turns them back on.
      if (line.trim() === `::${this.stopToken}::`) this.stopToken = undefined;
      else this.write(line);
      return;
    }
    const command = parseWorkflowCommand(line);
    if (!command) return this.write(line);
    const { name, properties, data } = command;
    switch (name) {
      case 'error':
      case 'warning':
      case 'notice':
        return this.annotate(name, data, properties);
      case 'group':
        this.endGroup();
        this.write(`##[group]${data}`);
        this.group = { step: this.stepId, title: this.job.masker.apply(data), lines: [] };
        this.job.groups.push(this.group);
        return;
      case 'endgroup':
        this.endGroup();
        return this.write('##[endgroup]');
      case 'add-mask':
        // The command line itself is not shown (the runner consumes it).
        if (data.trim() === '') return this.write("##[warning]Can't add secret mask for empty string in ##[add-mask] command.");
        return this.job.masker.add(data);
      case 'debug':
        if (this.job.debug) this.write(`##[debug]${data}`);
        return;
      case 'stop-commands':
        this.stopToken = data;
        return;
      case 'set-output':
        if (properties.name) this.commandOutputs[properties.name] = data;
        return this.annotate(
          'warning',
          'The `set-output` command is deprecated and will be disabled soon. Please upgrade to using Environment Files.',
        );
      default:
        return; // save-state, echo: consumed, nothing shown
    }
  }

  endGroup(): void {
    this.group = undefined;
  }
}

// --- file commands ------------------------------------------------------------------------------

/**
 * A GITHUB_OUTPUT or GITHUB_ENV file: `name=value` lines and the `name<<DELIMITER` heredoc form
 * (@actions/core writes the latter), as the runner reads them: whichever of `=` and `<<` comes
 * first decides the form; a missing delimiter or a line of neither form is an error.
 */
export function parseFileCommand(text: string, label: string): [string, string][] {
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  const out: [string, string][] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const eq = line.indexOf('=');
    const heredoc = line.indexOf('<<');
    if (eq >= 0 && (heredoc < 0 || eq < heredoc)) {
      const name = line.slice(0, eq);
      if (name === '') throw new Error(`${label}: Invalid format '${line}'`);
      out.push([name, line.slice(eq + 1)]);
    } else if (heredoc >= 0) {
      const name = line.slice(0, heredoc);
      const delimiter = line.slice(heredoc + 2);
      if (name === '' || delimiter === '') throw new Error(`${label}: Invalid format '${line}'`);
      const end = lines.indexOf(delimiter, i + 1);
      if (end < 0) throw new Error(`${label}: Matching delimiter not found '${delimiter}'`);
      out.push([name, lines.slice(i + 1, end).join('\n')]);
      i = end;
    } else {
      throw new Error(`${label}: Invalid format '${line}'`);
    }
  }
  return out;
}
