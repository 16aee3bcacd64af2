/**
 * `cudamatrix export`'s files read by the tools they are for: conftest_cudamatrix.py by pytest
 * (a usable feature's test runs, a claimed-but-fails one's is skipped with the reason, a typo
 * errors) and cudamatrix.cmake by CMake and CTest (the unusable test is reported Disabled, the
 * other passes, a typo stops the configure). Needs python3 with pytest, cmake and ctest.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportCommand } from '../../cli/export.ts';
import type { TargetCapabilities } from '../../behaviour/export-capabilities.ts';
import { EXPORT_FIXTURE_LOG, fixtureCapabilities, POOL_POSIX_FD_REASON } from '../export-fixture.ts';
import { commandsAvailable, hasCommand, integrationAvailable, tempDir } from '../helpers.ts';

const haveCmake = commandsAvailable('the CMake export test', { cmake: 'cmake', ctest: 'cmake' });
const havePytest =
  commandsAvailable('the pytest export test', { python3: 'python3' }) &&
  integrationAvailable(
    'pytest (python3 -m pytest)',
    hasCommand('python3', ['-m', 'pytest', '--version']),
    'apt-get install python3-pytest',
  );

let out: string;
let wslBox: TargetCapabilities;
beforeAll(() => {
  out = path.join(tempDir('cm-export-'), 'out');
  const stdout = process.stdout.write;
  process.stdout.write = () => true;
  try {
    expect(exportCommand([EXPORT_FIXTURE_LOG], { out }, fixtureCapabilities())).toBe(0);
  } finally {
    process.stdout.write = stdout;
  }
  wslBox = JSON.parse(readFileSync(path.join(out, 'wsl-box', 'capabilities.json'), 'utf8'));
});

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const result = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, PYTHONIOENCODING: 'utf-8', PYTHONDONTWRITEBYTECODE: '1', ...env },
  });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

const TESTS_PY = `import json
import pytest


@pytest.mark.requires_cuda("memory-pools.device_pool")
def test_usable():
    pass


@pytest.mark.requires_cuda("memory-pools.pool_posix_fd")
def test_claimed_but_fails():
    raise AssertionError("must have been skipped")


@pytest.mark.requires_cuda("memory-pools.pool_posix_fdd")
def test_typo():
    raise AssertionError("a typo must not run")


def test_the_dict_is_the_json(capabilities_json):
    from conftest_cudamatrix import CUDA_CAPABILITIES, CUDAMATRIX_TARGET, cuda_usable
    with open(capabilities_json, encoding="utf-8") as f:
        exported = json.load(f)
    assert CUDA_CAPABILITIES == exported.pop("features")
    assert CUDAMATRIX_TARGET == exported
    assert cuda_usable("ipc-handles.posix_fd") is True
`;

describe.runIf(havePytest)('conftest_cudamatrix.py under pytest', () => {
  it('runs the test of a usable feature, skips the claimed-but-fails one with the reason, and errors on a typo', () => {
    const project = tempDir('cm-export-pytest-');
    copyFileSync(path.join(out, 'wsl-box', 'conftest_cudamatrix.py'), path.join(project, 'conftest_cudamatrix.py'));
    const json = path.join(out, 'wsl-box', 'capabilities.json');
    writeFileSync(
      path.join(project, 'conftest.py'),
      `import pytest\nfrom conftest_cudamatrix import *\n\n\n@pytest.fixture\ndef capabilities_json():\n    return ${JSON.stringify(json)}\n`,
    );
    writeFileSync(path.join(project, 'test_cuda.py'), TESTS_PY);
    const result = run('python3', ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', '--strict-markers'], project);
    expect(result.output).toMatch(/\b2 passed, 1 skipped, 1 error\b/);
    expect(result.code).toBe(1);
    expect(result.output).toContain(`SKIPPED [1] test_cuda.py:10: ${POOL_POSIX_FD_REASON}`);
    expect(result.output).toMatch(/ERROR at setup of test_typo/);
    expect(result.output).toContain("unknown CUDA feature 'memory-pools.pool_posix_fdd'");
    expect(result.output).toContain('Known features: host-register-flags.read_only, ipc-handles.posix_fd');
    expect(result.output).not.toContain('a typo must not run');
    expect(result.output).not.toContain('must have been skipped');
    expect(result.output).not.toContain('During handling');
  });

  it('works as pytest_plugins from the export folder itself, and skips with every unusable feature named', () => {
    const project = tempDir('cm-export-pytest-');
    writeFileSync(path.join(project, 'conftest.py'), 'pytest_plugins = ["conftest_cudamatrix"]\n');
    writeFileSync(
      path.join(project, 'test_two.py'),
      `import pytest


@pytest.mark.requires_cuda("memory-pools.device_pool", "ipc-handles.posix_fd")
def test_both_usable():
    pass


@pytest.mark.requires_cuda("memory-pools.device_pool")
@pytest.mark.requires_cuda("virtual-memory.vmm", "ipc-handles.win32")
def test_unmeasured_and_undecided():
    raise AssertionError("must have been skipped")
`,
    );
    const result = run('python3', ['-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider', '--strict-markers'], project, {
      PYTHONPATH: path.join(out, 'wsl-box'),
    });
    expect(result.output).toMatch(/\b1 passed, 1 skipped\b/);
    expect(result.code).toBe(0);
    expect(result.output).toContain(`${wslBox.features['virtual-memory.vmm']!.summary}; ${wslBox.features['ipc-handles.win32']!.summary}`);
    expect(wslBox.features['virtual-memory.vmm']!.summary).toContain('not measured (probe virtual-memory did not run on this target');
  });
});

/** A CMake project with two tests, each requiring a feature; `extra` goes at its end. */
function cmakeProject(cmakeFile: string, extra = ''): string {
  const project = tempDir('cm-export-cmake-');
  writeFileSync(
    path.join(project, 'CMakeLists.txt'),
    `cmake_minimum_required(VERSION 3.16)
project(capabilities NONE)
enable_testing()
include(${JSON.stringify(cmakeFile)})
add_test(NAME usable COMMAND \${CMAKE_COMMAND} -E true)
add_test(NAME claimed_but_fails COMMAND \${CMAKE_COMMAND} -E false)
cudamatrix_requires(usable memory-pools.device_pool)
cudamatrix_requires(claimed_but_fails memory-pools.pool_posix_fd)
${extra}
`,
  );
  return project;
}

describe.runIf(haveCmake)('cudamatrix.cmake under CMake and CTest', () => {
  it('disables the test of the claimed-but-fails feature, saying why, and runs the usable one', () => {
    const cmakeFile = path.join(out, 'wsl-box', 'cudamatrix.cmake');
    const hostPool = wslBox.features['memory-pools.host_pool']!;
    const project = cmakeProject(
      cmakeFile,
      `cudamatrix_usable(posix_fd ipc-handles.posix_fd)
message(STATUS "posix_fd usable: \${posix_fd} \${CUDAMATRIX_IPC_HANDLES_POSIX_FD_USABLE} \${CUDAMATRIX_HOST_REGISTER_FLAGS_READ_ONLY_USABLE}")
file(WRITE "\${CMAKE_BINARY_DIR}/host_pool_why.txt" "\${CUDAMATRIX_MEMORY_POOLS_HOST_POOL_WHY}")`,
    );
    const configure = run('cmake', ['-S', '.', '-B', 'build'], project);
    expect(configure.code, configure.output).toBe(0);
    expect(configure.output).toContain(`cudamatrix: test claimed_but_fails disabled: ${POOL_POSIX_FD_REASON}`);
    expect(configure.output).not.toContain('test usable disabled');
    expect(configure.output).toContain('posix_fd usable: ON ON OFF');
    // A reason with quotes, backslashes, ${...} and ";" comes through as it was (";" as ",").
    expect(hostPool.summary).toMatch(/\$\{HOME\}.*"""quoted"""/);
    expect(readFileSync(path.join(project, 'build', 'host_pool_why.txt'), 'utf8')).toBe(hostPool.summary.replace(/;/g, ','));

    const ctest = run('ctest', ['--test-dir', 'build'], project);
    expect(ctest.output).toMatch(/usable \.+\s+Passed/);
    expect(ctest.output).toMatch(/claimed_but_fails \.+\**Not Run \(Disabled\)/);
    expect(ctest.output).toContain('100% tests passed, 0 tests failed out of 1');
    expect(ctest.code).toBe(0);
  });

  it('stops the configure on a feature it does not know', () => {
    const project = cmakeProject(path.join(out, 'h200', 'cudamatrix.cmake'), 'cudamatrix_requires(usable memory-pools.device_poll)');
    const configure = run('cmake', ['-S', '.', '-B', 'build'], project);
    expect(configure.code).not.toBe(0);
    // CMake wraps a FATAL_ERROR's text at its own widths.
    configure.output = configure.output.replace(/\s+/g, ' ');
    expect(configure.output).toContain(
      'cudamatrix_requires(usable memory-pools.device_poll): unknown CUDA feature "memory-pools.device_poll"',
    );
    expect(configure.output).toContain('Known features: host-register-flags.read_only, ipc-handles.posix_fd');
  });

  it('stops the configure on a test name it cannot find, also where every feature is usable', () => {
    // On a machine with the feature a misspelt test would otherwise pass unseen, and break the build elsewhere.
    const project = cmakeProject(path.join(out, 'h200', 'cudamatrix.cmake'), 'cudamatrix_requires(usabel memory-pools.device_pool)');
    const configure = run('cmake', ['-S', '.', '-B', 'build'], project);
    expect(configure.code).not.toBe(0);
    expect(configure.output.replace(/\s+/g, ' ')).toContain('cudamatrix_requires(usabel): no test of that name in this directory');
  });
});

describe('the pytest and CMake tests', () => {
  it('have their fixture: two targets exported, wsl-box with the brief example', () => {
    expect(wslBox.features['memory-pools.pool_posix_fd']!.summary).toBe(POOL_POSIX_FD_REASON);
  });
});
