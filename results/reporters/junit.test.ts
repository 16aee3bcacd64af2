import { describe, expect, it } from 'vitest';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../../test/events-fixture.ts';
import { validateJunit } from '../../test/helpers.ts';
import { summarize } from '../verdicts.ts';
import { junitXml } from './junit.ts';

const events = [
  runStart({ linux: [{ fact: 'sysinfo.tcc_driver', equals: false }, { fact: 'sysinfo.gpu_name', equals: 'NVIDIA H100' }] }),
  targetStart('gpu', [], 'auto'),
  cell('gpu', 'sysinfo', 'passed', sysinfo({ environment: 'linux', gpu_name: 'NVIDIA H200 <&"quoted">', tcc_driver: false, driver_model: null })),
  targetStart('nodriver'),
  cell('nodriver', 'sysinfo', 'skipped', sysinfo({ environment: 'linux' }), { reason: 'no NVIDIA driver found' }),
  targetStart('crashed'),
  cell('crashed', 'sysinfo', 'error', [], { reason: 'killed by SIGSEGV', errorCode: 'PROBE_CRASHED', stderrTail: 'Segmentation fault' }),
  targetStart('unreachable'),
  { type: 'target-error' as const, target: 'unreachable', time: '', code: 'TARGET_UNREACHABLE', message: 'connect ECONNREFUSED' },
  cell('unreachable', 'sysinfo', 'error', [], { reason: 'connect ECONNREFUSED', errorCode: 'TARGET_UNREACHABLE' }),
  // A target that cannot run probes by its nature: its cells are skipped with the transport's message.
  targetStart('wsl1', [{ fact: 'sysinfo.wsl_version', equals: 2 }], 'wsl2'),
  { type: 'target-error' as const, target: 'wsl1', time: '', code: 'WSL_VERSION_1', message: 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"' },
  cell('wsl1', 'sysinfo', 'skipped', [], { durationMs: 0, reason: 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"', errorCode: 'WSL_VERSION_1' }),
  runEnd,
];

describe('JUnit reporter', () => {
  const xml = junitXml(summarize(events));

  it('validates against the JUnit 10 schema', async () => {
    await expect(validateJunit(xml)).resolves.toBeUndefined();
  });

  // The check above means something only if the validator refuses what the schema refuses.
  it('is checked by a validator that refuses invalid JUnit, with its message', async () => {
    const nameless = xml.replace('<testcase classname="gpu.expectations" name=', '<testcase classname="gpu.expectations" title=');
    expect(nameless).not.toBe(xml);
    await expect(validateJunit(nameless)).rejects.toThrow(/Element 'testcase': The attribute 'name' is required but missing/);
    await expect(validateJunit('<testsuites><testsuite')).rejects.toThrow(/parser error/);
  });

  it('has a suite per target with sysinfo properties, and a case per cell and per expectation', () => {
    expect(xml.match(/<testsuite /g)).toHaveLength(5);
    expect(xml).toContain('<property name="sysinfo.gpu_name" value="NVIDIA H200 &lt;&amp;&quot;quoted&quot;>"/>');
    expect(xml).toContain('<property name="sysinfo.driver_model" value="null"/>');
    expect(xml).toMatch(/<testcase classname="gpu.expectations" name="sysinfo.gpu_name == &quot;NVIDIA H100&quot; \[linux\]">\s*<failure message="expected sysinfo.gpu_name/);
    expect(xml).toMatch(/name="probe sysinfo runs" time="0.12">\s*<skipped\/>\s*<system-out><!\[CDATA\[skipped: no NVIDIA driver found/);
    expect(xml).toMatch(/<error message="killed by SIGSEGV" type="PROBE_CRASHED"/);
    expect(xml).toMatch(/<error message="connect ECONNREFUSED" type="TARGET_UNREACHABLE"/);
    expect(xml).toContain('<system-err><![CDATA[Segmentation fault]]></system-err>');
  });

  it('skips the cells of a target that cannot run probes by its nature, with the reason and the code, and no error', () => {
    const suite = /<testsuite name="wsl1"[^>]*>[\s\S]*?<\/testsuite>/.exec(xml)![0];
    expect(suite).toMatch(/tests="2" failures="0" errors="0" skipped="2"/);
    expect(suite).toMatch(/name="probe sysinfo runs" time="0">\s*<skipped message="WSL distribution &quot;Legacy&quot; runs under WSL 1, which has no GPU: &quot;wsl.exe --set-version Legacy 2&quot;" type="WSL_VERSION_1"\/>/);
    // Its expectations are not judged: skipped, with the probe's reason.
    expect(suite).toMatch(/name="sysinfo.wsl_version == 2 \[target\]">\s*<skipped\/>\s*<system-out><!\[CDATA\[skipped: probe sysinfo was skipped: WSL distribution "Legacy" runs under WSL 1/);
    expect(suite).not.toMatch(/<error|<failure/);
  });
});
