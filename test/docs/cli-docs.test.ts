/**
 * docs/cli.md is generated from the commander program (scripts/write-cli-docs.ts): the committed
 * page must be what the script writes now, so that --help and the docs never drift.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/main.ts';
import { CLI_DOCS_FILE, renderCliDocs } from '../../scripts/write-cli-docs.ts';

/** The text a command's --help prints after its options (addHelpText 'after'). */
function helpAfter(command: Command): string {
  let out = '';
  command.configureOutput({ writeOut: (chunk) => (out += chunk), writeErr: () => {} });
  command.outputHelp();
  return out;
}

describe('docs/cli.md', () => {
  it('is what scripts/write-cli-docs.ts writes from the program', () => {
    const committed = readFileSync(CLI_DOCS_FILE, 'utf8');
    expect(
      committed === renderCliDocs(),
      'docs/cli.md differs from the commander program: run `pnpm docs:cli` and commit docs/cli.md',
    ).toBe(true);
  });

  it("names every command, option and default, and each command's exit table", () => {
    const page = renderCliDocs();
    expect(page).toContain('## cudamatrix gha merge');
    expect(page).toContain('| `--older-than <duration>` |');
    expect(page).toContain(
      '| `--results-dir <dir>` | folder for run folders (each run writes &lt;dir&gt;/&lt;run-id&gt;/events.jsonl, junit.xml, summary.json) | `results/runs` |',
    );
    expect(page, 'a | in a table cell is escaped, or the row splits').toContain('| `--plan <json\\|file>` |');
    expect(page).toMatch(/## cudamatrix diff[\s\S]*Exit status:\n {2}0 {2}the same behaviour/);
    // An argument's default, as --help gives it.
    expect(page).toContain('| `[file]` | the file to write (never overwritten) (default: `"cudamatrix.yaml"`) |');
  });

  it('gives every command that runs (not a group of commands) an exit table in its --help, as the page says', () => {
    const leaves = (command: Command): Command[] => (command.commands.length ? command.commands.flatMap(leaves) : [command]);
    const without = leaves(buildProgram())
      .filter((command) => !command.helpInformation().includes('Exit status') && !helpAfter(command).includes('Exit status'))
      .map((command) => command.name());
    expect(without).toEqual([]);
  });

  it('changes when the program does (an option added elsewhere shows up)', () => {
    const program = buildProgram();
    const run = program.commands.find((command) => command.name() === 'run');
    run?.option('--made-up-flag <n>', 'an option only this test adds', '7');
    const page = renderCliDocs(program);
    expect(page).not.toBe(renderCliDocs());
    expect(page).toContain('| `--made-up-flag <n>` | an option only this test adds | `7` |');
  });
});
