/**
 * cudamatrix export: a run's (or a record's) capability facts as files a project's own tests
 * read, per target under --out: capabilities.json, conftest_cudamatrix.py (pytest) and
 * cudamatrix.cmake (CTest). docs/export.md says what each holds and how a project uses it.
 */
import path from 'node:path';
import { statSync } from 'node:fs';
import { writeFileAtomic } from '../core/fs.ts';
import { CudamatrixError, ExitCode } from '../core/errors.ts';
import { keyText } from '../behaviour/behaviour-record.ts';
import { readInput } from '../behaviour/read.ts';
import {
  capabilitiesJson,
  catalogueCapabilities,
  targetCapabilities,
  targetFolder,
  type CapabilitySpec,
  type TargetCapabilities,
} from '../behaviour/export-capabilities.ts';
import { conftestPython } from '../behaviour/export-pytest.ts';
import { cudamatrixCmake } from '../behaviour/export-cmake.ts';

export interface ExportOptions {
  out: string;
}

/** The files of one target, relative to its folder, with their text. */
export function exportFiles(capabilities: TargetCapabilities): [string, string][] {
  return [
    ['capabilities.json', capabilitiesJson(capabilities)],
    ['conftest_cudamatrix.py', conftestPython(capabilities)],
    ['cudamatrix.cmake', cudamatrixCmake(capabilities)],
  ];
}

/**
 * Exports every target of every input into its own folder of opts.out. `specs`: the capability
 * facts to export (the catalogue's; a test passes its own). Every input is read, and every
 * target's folder checked for a clash, before anything is written.
 */
export function exportCommand(sources: string[], opts: ExportOptions, specs: readonly CapabilitySpec[] = catalogueCapabilities()): number {
  const out = statSync(opts.out, { throwIfNoEntry: false });
  if (out && !out.isDirectory())
    throw new CudamatrixError(
      'USAGE',
      `--out ${opts.out} is a file; name a folder (export writes <folder>/<target>/capabilities.json and the rest)`,
    );
  const targets = new Map<string, { capabilities: TargetCapabilities; from: string }>();
  for (const source of sources) {
    // Verdicts are not exported: the default expectations are not needed (nor loaded).
    const input = readInput(source, {}, { complete: true, foldersOfRecords: false });
    if (input.kind === 'records-folder') {
      throw new CudamatrixError(
        'USAGE',
        `${source} is a folder of records (many observations, of other machines and drivers); export takes the record files (.json) or run folders you mean, each giving its targets`,
      );
    }
    for (const why of input.unrecorded) process.stderr.write(`${source}: not exported: ${why}\n`);
    for (const { record, file } of input.records) {
      const capabilities = targetCapabilities(record, { file: sourceName(file ?? input.eventLog ?? source), kind: input.kind }, specs);
      const folder = targetFolder(record.observed.target);
      const before = targets.get(folder);
      if (before) {
        throw new CudamatrixError(
          'EXPORT_DUPLICATE_TARGET',
          `${source} and ${before.from} both hold target ${record.observed.target} (folder ${path.join(opts.out, folder)}): a folder holds one observation; export them into different --out folders, or pass only the run you mean`,
        );
      }
      targets.set(folder, { capabilities, from: source });
    }
  }
  if (targets.size === 0) {
    process.stderr.write(
      'nothing exported: no input holds an observation of a GPU (a target whose sysinfo found a driver and a GPU, and a probe that measured something)\n',
    );
    return ExitCode.nothingMeasured;
  }
  if (specs.length === 0)
    process.stderr.write(
      'warning: this cudamatrix has no capability facts in its catalogue: the files name no feature, and every requires_cuda / cudamatrix_requires is an unknown feature\n',
    );
  for (const [folder, { capabilities }] of targets) {
    for (const [file, text] of exportFiles(capabilities)) writeFileAtomic(path.join(opts.out, folder, file), text);
    const features = Object.values(capabilities.features);
    const usable = features.filter((feature) => feature.usable).length;
    const measured = features.filter((feature) => feature.measured).length;
    process.stdout.write(
      `wrote ${path.join(opts.out, folder)}/ (capabilities.json, conftest_cudamatrix.py, cudamatrix.cmake): target ${capabilities.target} (${keyText(capabilities)}), ${features.length} features, ${measured} measured, ${usable} usable\n`,
    );
    if (measured === 0 && features.length)
      process.stderr.write(
        `warning: target ${capabilities.target} measured none of the capability facts (${[...new Set(specs.map((spec) => spec.probe))].join(', ')}): every feature is "not measured" there; run those probes\n`,
      );
  }
  return ExitCode.ok;
}

/**
 * How an input is named in the files: relative to the working folder, with /, however it was
 * typed (x, ./x, /abs/x), so that the same input gives the same bytes; outside the working folder
 * its folder and name only, so that no runner's path lands in a committed file.
 */
export function sourceName(file: string): string {
  const absolute = path.resolve(file);
  const relative = path.relative(process.cwd(), absolute);
  if (relative && !relative.startsWith('..') && !path.isAbsolute(relative)) return relative.split(path.sep).join('/');
  return `${path.basename(path.dirname(absolute))}/${path.basename(absolute)}`;
}
