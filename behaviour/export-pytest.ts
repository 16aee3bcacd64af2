/**
 * conftest_cudamatrix.py, which `cudamatrix export` writes per target: a pytest fragment that a
 * project imports from its conftest.py. It registers the marker requires_cuda(feature, ...) and
 * skips a test whose feature was not measured usable on the target, with the measured value, the
 * call, its result and the driver as the reason. A feature name it does not know fails that test
 * at setup: a typo must neither skip the test nor let it run.
 */
import { CAPABILITIES_SCHEMA, type TargetCapabilities } from './export-capabilities.ts';

/**
 * A JSON value as a Python literal. A JSON string is a valid Python string literal (its escapes,
 * \" \\ \n \uXXXX..., mean the same in Python 3); true, false and null are spelled True, False, None.
 */
export function pythonLiteral(value: unknown, indent = ''): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : 'None';
  if (typeof value === 'string') return JSON.stringify(value);
  const inner = `${indent}    `;
  if (Array.isArray(value))
    return value.length ? `[\n${value.map((item) => `${inner}${pythonLiteral(item, inner)},\n`).join('')}${indent}]` : '[]';
  const entries = Object.entries(value as Record<string, unknown>);
  if (!entries.length) return '{}';
  return `{\n${entries.map(([k, item]) => `${inner}${JSON.stringify(k)}: ${pythonLiteral(item, inner)},\n`).join('')}${indent}}`;
}

/** The fragment's text for one target. */
export function conftestPython(capabilities: TargetCapabilities): string {
  const { features, ...target } = capabilities;
  const names = Object.keys(features);
  const example = names[0] ?? 'probe.feature';
  // A value with a line break (a GPU name) must not end the comment.
  const comment = (line: string) => `# ${line.replace(/[\r\n]+/g, ' ')}`.trimEnd();
  return `${[
    `conftest_cudamatrix.py: written by \`cudamatrix export\` (cudamatrix ${capabilities.source.cudamatrix}) from run ${capabilities.source.runId}`,
    `(${capabilities.source.file}), target ${capabilities.target}: ${capabilities.gpu}, driver ${capabilities.driver}, ${capabilities.environment}, ${capabilities.os}.`,
    'Do not edit it: export again after the next run (docs/export.md).',
    '',
    'In your conftest.py:   from conftest_cudamatrix import *   (or: pytest_plugins = ["conftest_cudamatrix"])',
    `On a test:             @pytest.mark.requires_cuda("${example}")`,
    'A test runs when every feature it names was measured usable here (works, works-unclaimed), and is',
    'skipped otherwise, the reason naming the measured value, the call, its result and the driver. A',
    'feature this file does not know fails the test at setup: a typo must neither skip it nor run it.',
  ]
    .map(comment)
    .join('\n')}
import pytest

CUDAMATRIX_SCHEMA = ${JSON.stringify(CAPABILITIES_SCHEMA)}

# The target these capabilities were measured on, and where they came from.
CUDAMATRIX_TARGET = ${pythonLiteral(target)}

# Feature ("probe.fact") -> what was measured: value, usable, claimed, attribute, call, result, summary...
CUDA_CAPABILITIES = ${pythonLiteral(features)}


class UnknownCudaFeature(LookupError):
    """A feature name that this export does not know: a typo, or a probe newer than the export."""


def cuda_capability(feature):
    """The measured capability of FEATURE (a dict); UnknownCudaFeature for a name this export does not know."""
    if isinstance(feature, str) and feature in CUDA_CAPABILITIES:
        return CUDA_CAPABILITIES[feature]
    known = ", ".join(sorted(CUDA_CAPABILITIES)) or "none: the catalogue of the cudamatrix that exported it had no capability facts"
    raise UnknownCudaFeature(
        "unknown CUDA feature %r in requires_cuda (conftest_cudamatrix.py, from cudamatrix export of run %s); "
        "fix the name, or export again with a cudamatrix that has it. Known features: %s"
        % (feature, CUDAMATRIX_TARGET["source"]["runId"], known)
    )


def cuda_usable(feature):
    """Whether FEATURE was measured usable on this target (works or works-unclaimed)."""
    return cuda_capability(feature)["usable"]


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "requires_cuda(feature, ...): skip unless cudamatrix measured every FEATURE usable on this target "
        "(conftest_cudamatrix.py, run %s on %s)" % (CUDAMATRIX_TARGET["source"]["runId"], CUDAMATRIX_TARGET["target"]),
    )


def _cuda_requirements(item):
    """The error of a requires_cuda that names no feature or an unknown one (else None), and why each named feature is not usable."""
    reasons = []
    for marker in item.iter_markers(name="requires_cuda"):
        if not marker.args:
            return "%s: requires_cuda needs at least one feature name, e.g. @pytest.mark.requires_cuda(%r)" % (item.nodeid, ${JSON.stringify(example)}), []
        for feature in marker.args:
            try:
                capability = cuda_capability(feature)
            except UnknownCudaFeature as error:
                return "%s: %s" % (item.nodeid, error), []
            if not capability["usable"]:
                reasons.append(capability["summary"])
    return None, reasons


def pytest_collection_modifyitems(config, items):
    # Skipped by a marker, so that pytest -rs names the test's own file and line.
    for item in items:
        error, reasons = _cuda_requirements(item)
        if error is None and reasons:
            item.add_marker(pytest.mark.skip(reason="; ".join(reasons)))


def pytest_runtest_setup(item):
    # An unknown feature fails the test (an error at setup): it must neither run nor skip.
    error, _ = _cuda_requirements(item)
    if error is not None:
        pytest.fail(error, pytrace=False)
`;
}
