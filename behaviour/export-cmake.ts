/**
 * cudamatrix.cmake, which `cudamatrix export` writes per target: CUDAMATRIX_<FEATURE>_USABLE ON or
 * OFF per capability fact, and cudamatrix_requires(TEST FEATURE...), which marks a CTest test
 * DISABLED (ctest reports it "Not Run (Disabled)") when a feature was not measured usable, saying
 * why at configure time. A feature it does not know is a FATAL_ERROR: a typo must not silently
 * disable a test, nor leave it enabled.
 */
import { CAPABILITIES_SCHEMA, type TargetCapabilities } from './export-capabilities.ts';

/** A feature's variable stem: upper-cased, anything but a letter or digit made "_" ("memory-pools.device_pool" -> MEMORY_POOLS_DEVICE_POOL). */
export function cmakeFeatureName(feature: string): string {
  return feature.replace(/[^A-Za-z0-9]/g, '_').toUpperCase();
}

/**
 * A CMake quoted argument holding `value` as it is. `;` becomes "," (a ";" would split the text
 * where CMake reads it as a list: a message's reasons are one); a line break is written \n.
 */
export function cmakeString(value: string): string {
  return `"${escaped(value.replace(/;/g, ','))}"`;
}

/** A CMake list (items joined by ";") as one quoted argument; an item's own ";" becomes ",". */
function cmakeList(items: string[]): string {
  return `"${items.map((item) => escaped(item.replace(/;/g, ','))).join(';')}"`;
}

/** Backslashes, quotes, $ (a variable reference) and line breaks escaped for a quoted argument. */
function escaped(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\$/g, '\\$').replace(/\r/g, '\\r').replace(/\n/g, '\\n');
}

/** The fragment's text for one target. */
export function cudamatrixCmake(capabilities: TargetCapabilities): string {
  const names = Object.keys(capabilities.features);
  const stems = names.map(cmakeFeatureName);
  const clash = stems.findIndex((stem, i) => stems.indexOf(stem) !== i);
  // Two catalogue names that differ only in punctuation would share one variable: a catalogue bug.
  if (clash >= 0)
    throw new Error(`capability facts ${names[stems.indexOf(stems[clash]!)]} and ${names[clash]} share the CMake name ${stems[clash]}`);
  const example = names[0] ?? 'probe.feature';
  const set = (name: string, value: string) => `set(${name} ${value})`;
  const source = capabilities.source;
  const lines = [
    `# cudamatrix.cmake: written by \`cudamatrix export\` (cudamatrix ${source.cudamatrix}) from run ${source.runId}`,
    `# (${source.file}), target ${capabilities.target}: ${capabilities.gpu}, driver ${capabilities.driver}, ${capabilities.environment}, ${capabilities.os}.`,
    '# Do not edit it: export again after the next run (docs/export.md).',
    '#',
    '# In your CMakeLists.txt, after enable_testing() and add_test(NAME my_test ...):',
    '#   include(path/to/cudamatrix.cmake)',
    `#   cudamatrix_requires(my_test ${example})`,
    '# A test one of whose features was not measured usable here (works, works-unclaimed) is DISABLED',
    '# (ctest: "Not Run (Disabled)"), and configuring says why. A feature this file does not know is a',
    '# FATAL_ERROR: a typo must neither disable a test nor leave it enabled. Each feature also has',
    '# CUDAMATRIX_<FEATURE>_USABLE (ON/OFF), _VALUE and _WHY; cudamatrix_usable(VAR FEATURE) checks the name.',
  ].map((line) => line.replace(/[\r\n]+/g, ' '));
  lines.push(
    '',
    set('CUDAMATRIX_SCHEMA', cmakeString(CAPABILITIES_SCHEMA)),
    set('CUDAMATRIX_TARGET', cmakeString(capabilities.target)),
    set('CUDAMATRIX_DRIVER', cmakeString(capabilities.driver)),
    set('CUDAMATRIX_GPU', cmakeString(capabilities.gpu)),
    set('CUDAMATRIX_ENVIRONMENT', cmakeString(capabilities.environment)),
    set('CUDAMATRIX_OS', cmakeString(capabilities.os)),
    set('CUDAMATRIX_RUN_ID', cmakeString(source.runId)),
    '# The features this file knows, and the variable stem of each (in the same order).',
    set('CUDAMATRIX_FEATURES', cmakeList(names)),
    set('CUDAMATRIX_FEATURE_STEMS', cmakeList(stems)),
  );
  for (const [i, name] of names.entries()) {
    const capability = capabilities.features[name]!;
    const stem = `CUDAMATRIX_${stems[i]}`;
    lines.push(
      '',
      `# ${capability.summary}`.replace(/[\r\n]+/g, ' '),
      set(`${stem}_USABLE`, capability.usable ? 'ON' : 'OFF'),
      set(`${stem}_VALUE`, cmakeString(capability.value === null ? '' : String(capability.value))),
      set(`${stem}_WHY`, cmakeString(capability.summary)),
    );
  }
  lines.push('', CMAKE_FUNCTIONS);
  return `${lines.join('\n')}\n`;
}

// The functions, the same in every export. CMAKE_CURRENT_LIST_FILE is this file while it is included.
const CMAKE_FUNCTIONS = `set(_CUDAMATRIX_FILE "\${CMAKE_CURRENT_LIST_FILE}")

# The variable stem of FEATURE in OUT_STEM; a FATAL_ERROR for a feature this file does not know.
function(_cudamatrix_stem out_stem feature caller)
  list(FIND CUDAMATRIX_FEATURES "\${feature}" at)
  if(at EQUAL -1)
    string(REPLACE ";" ", " known "\${CUDAMATRIX_FEATURES}")
    if(known STREQUAL "")
      set(known "none: the catalogue of the cudamatrix that exported it had no capability facts")
    endif()
    message(FATAL_ERROR "\${caller}: unknown CUDA feature \\"\${feature}\\" (\${_CUDAMATRIX_FILE}, from cudamatrix export of run \${CUDAMATRIX_RUN_ID}); fix the name, or export again with a cudamatrix that has it. Known features: \${known}")
  endif()
  list(GET CUDAMATRIX_FEATURE_STEMS \${at} stem)
  set(\${out_stem} "\${stem}" PARENT_SCOPE)
endfunction()

# cudamatrix_usable(OUT_VAR FEATURE): ON when FEATURE was measured usable here, else OFF.
function(cudamatrix_usable out_var feature)
  _cudamatrix_stem(stem "\${feature}" "cudamatrix_usable(\${out_var} \${feature})")
  set(\${out_var} \${CUDAMATRIX_\${stem}_USABLE} PARENT_SCOPE)
endfunction()

# cudamatrix_requires(TEST_NAME FEATURE...): disables the test unless every FEATURE was measured usable here.
function(cudamatrix_requires test_name)
  if(ARGC LESS 2)
    message(FATAL_ERROR "cudamatrix_requires(\${test_name}): name at least one feature after the test (\${_CUDAMATRIX_FILE})")
  endif()
  # Checked wherever it runs, so that a misspelt test fails on the machine with the feature too.
  if(NOT TEST "\${test_name}")
    message(FATAL_ERROR "cudamatrix_requires(\${test_name}): no test of that name in this directory: call it after add_test(NAME \${test_name} ...), with the same name")
  endif()
  set(why "")
  foreach(feature IN LISTS ARGN)
    _cudamatrix_stem(stem "\${feature}" "cudamatrix_requires(\${test_name} \${feature})")
    if(NOT CUDAMATRIX_\${stem}_USABLE)
      list(APPEND why "\${CUDAMATRIX_\${stem}_WHY}")
    endif()
  endforeach()
  if(why)
    string(REPLACE ";" "; " why "\${why}")
    set_tests_properties(\${test_name} PROPERTIES DISABLED TRUE)
    message(STATUS "cudamatrix: test \${test_name} disabled: \${why}")
  endif()
endfunction()`;
