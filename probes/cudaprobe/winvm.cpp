// cudaprobe vm-memory (winvm.hpp). The caller (cudamatrix, probes/host-vm-memory.ts) starts it on
// the Windows host before a memory probe runs in the distribution and stops it after; the bound
// is what ends it when nothing does (an SSH connection that drops leaves a Windows command
// running: PowerShell/Win32-OpenSSH#1751).
#include "winvm.hpp"

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#ifdef _WIN32
#include <windows.h>
#include <tlhelp32.h>
#endif

#include "emit.hpp"
#include "pdh_instances.hpp"
#include "platform.hpp"
#include "probe.hpp"
#include "process.hpp"
#include "winmem.hpp"

namespace cp {

namespace {

const char* kName = "vm-memory";

double number(const std::string& flag, const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (*end != '\0' || !(v > 0)) throw UsageError{flag + " needs a positive number, got " + text};
  return v;
}

void emitSample(double tMs, const std::string& pids, const Reading& dedicated, const Reading& shared) {
  Obj readings, reasons, attrs;
  for (const auto& kv : {std::make_pair("vm_dedicated_bytes", &dedicated), std::make_pair("vm_shared_bytes", &shared)}) {
    if (kv.second->ok()) {
      readings.num(kv.first, kv.second->value);
    } else {
      readings.null(kv.first);
      reasons.str(kv.first, kv.second->reason);
    }
  }
  attrs.num("t_ms", tMs).str("vm_pids", pids);
  Line l("sample", kName);
  l.str("phase", "host").raw("readings", readings.json());
  if (!reasons.empty()) l.raw("reasons", reasons.json());
  l.raw("attrs", attrs.json()).emit();
}

// One sample of nulls, both with `why`: nothing to sample here.
int nothing(const std::string& why) {
  Reading none;
  none.reason = why;
  emitSample(0, "", none, none);
  return kExitNoDriver;
}

#ifdef _WIN32
bool listProcesses(std::vector<ProcessEntry>& out, std::string& reason) {
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snap == INVALID_HANDLE_VALUE) {
    reason = "CreateToolhelp32Snapshot failed: error " + std::to_string(GetLastError());
    return false;
  }
  PROCESSENTRY32W e;
  e.dwSize = sizeof e;
  for (BOOL more = Process32FirstW(snap, &e); more; more = Process32NextW(snap, &e)) out.push_back({e.th32ProcessID, toUtf8(e.szExeFile)});
  CloseHandle(snap);
  return true;
}

// One counter summed over the VM processes. Where it cannot be read at all it says so each
// sample (a counter set does not appear later, but the caller decides when sampling ends).
Reading vmCounter(const wchar_t* path, const std::vector<uint64_t>& pids) {
  std::vector<CounterItem> items;
  Reading r;
  if (readGpuCounter(path, items, r.reason)) return selectProcesses(items, pids);
  r.reason = "this host has no PDH GPU counter set (\"GPU Process Memory\": Windows 10 1709 or later with a WDDM 2.x driver): " + r.reason;
  return r;
}
#endif

}  // namespace

int runVmMemory(int argc, char** argv) {
  double maxSeconds = 600, intervalMs = 250;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--max-seconds" || a == "--interval-ms") && i + 1 >= argc) throw UsageError{a + " needs a value"};
    if (a == "--max-seconds") maxSeconds = number(a, argv[++i]);
    else if (a == "--interval-ms") intervalMs = number(a, argv[++i]);
    else throw UsageError{"unknown argument " + a};
  }
  // A test hook (never set in real runs): another process stands for the VM, for the paths past
  // finding it on machines without one (Wine).
  const char* testVm = std::getenv("CUDAPROBE_TEST_VM_PROCESS");
  std::vector<std::string> names = testVm ? std::vector<std::string>{testVm} : std::vector<std::string>{"vmmemWSL", "vmmem"};
  std::string nameList;
  for (const std::string& n : names) nameList += (nameList.empty() ? "" : ", ") + n;
#ifndef _WIN32
  (void)maxSeconds;
  (void)intervalMs;
  return nothing("the GPU counters of a WSL 2 VM are read on its Windows host: this is not Windows");
#else
  auto start = std::chrono::steady_clock::now();
  std::vector<ProcessEntry> processes;
  std::string why;
  if (!listProcesses(processes, why)) return nothing(why);
  std::vector<uint64_t> pids = vmProcesses(processes, names);
  if (pids.empty()) return nothing("no VM process (" + nameList + ") runs on this host: no WSL 2 distribution is running, or its VM has another name");
  std::string pidList;
  for (uint64_t p : pids) pidList += (pidList.empty() ? "" : ",") + std::to_string(p);
  for (;;) {
    double tMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    Reading dedicated = vmCounter(L"\\GPU Process Memory(*)\\Dedicated Usage", pids);
    Reading shared = vmCounter(L"\\GPU Process Memory(*)\\Shared Usage", pids);
    emitSample(tMs, pidList, dedicated, shared);
    if (tMs + intervalMs > maxSeconds * 1000) return kExitRan;
    sleepSeconds(intervalMs / 1000);
  }
#endif
}

}  // namespace cp
