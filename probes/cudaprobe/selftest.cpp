#include "selftest.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "emit.hpp"
#include "pdh_instances.hpp"
#include "probe.hpp"
#include "probes/p2p_iommu.hpp"
#include "probes/p2p_topology.hpp"
#include "winmem.hpp"

namespace cp {

namespace {

void put(Obj& o, const char* key, const Reading& r) {
  if (r.ok()) {
    o.num(key, r.value);
  } else {
    o.null(key);
    o.str((std::string(key) + "_reason").c_str(), r.reason);
  }
}

bool parseLuid(const char* text, AdapterLuid& luid) {
  GpuInstance g = parseGpuInstance(std::string("luid_") + text + "_phys_0");
  if (!g.ok) {
    std::fprintf(stderr, "cudaprobe: selftest: LUID %s is not 0xHHHHHHHH_0xLLLLLLLL\n", text);
    return false;
  }
  luid = g.luid;
  return true;
}

int pdhSelect(const char* pidText, const char* luidText) {
  uint64_t pid = std::strtoull(pidText, nullptr, 10);
  AdapterLuid luid;
  bool haveLuid = std::strcmp(luidText, "-") != 0;
  if (haveLuid && !parseLuid(luidText, luid)) return kExitUsage;
  std::vector<CounterItem> items;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto tab = line.find('\t');
    if (tab != std::string::npos) items.push_back({line.substr(0, tab), std::atof(line.c_str() + tab + 1)});
  }
  Obj o;
  put(o, "value", selectInstances(items, pid, haveLuid ? &luid : nullptr, "no LUID given"));
  std::printf("%s\n", o.json().c_str());
  return kExitRan;
}

int vmSelect(int argc, char** argv) {
  std::vector<std::string> names(argv + 3, argv + argc);
  if (names.empty()) names = {"vmmemWSL", "vmmem"};
  std::vector<ProcessEntry> processes;
  std::vector<CounterItem> items;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto tab = line.find('\t');
    if (line.rfind("process ", 0) == 0) {
      auto space = line.find(' ', 8);
      if (space != std::string::npos) processes.push_back({std::strtoull(line.c_str() + 8, nullptr, 10), line.substr(space + 1)});
    } else if (tab != std::string::npos) {
      items.push_back({line.substr(0, tab), std::atof(line.c_str() + tab + 1)});
    }
  }
  std::vector<uint64_t> pids = vmProcesses(processes, names);
  std::string list;
  for (uint64_t p : pids) list += (list.empty() ? "" : ",") + std::to_string(p);
  Obj o;
  o.raw("pids", "[" + list + "]");
  if (!pids.empty()) put(o, "value", selectProcesses(items, pids));
  std::printf("%s\n", o.json().c_str());
  return kExitRan;
}

int adapter(const char* luidText) {
  DeviceAdapter a;
  if (!parseLuid(luidText, a.luid)) return kExitUsage;
  a.known = true;
  Obj o;
  PdhReadings pdh = pdhReadings(0, a);
  put(o, "pdh_adapter_dedicated_bytes", pdh.adapterDedicated);
  DxgiReadings d = adapterMemory(a.luid);
  put(o, "dxgi_local_bytes", d.local);
  put(o, "dxgi_nonlocal_bytes", d.nonLocal);
  std::string why;
  int hags = hwSchedulerEnabled(a, why);
  if (hags >= 0) o.boolean("hags_enabled", hags == 1);
  else o.null("hags_enabled").str("hags_enabled_reason", why);
  std::printf("%s\n", o.json().c_str());
  return kExitRan;
}

}  // namespace

std::string tdrOffWindowsReason(const char* value, bool inWsl);  // probes/settings_probes.cpp

int runSelftest(int argc, char** argv) {
  std::string mode = argc > 2 ? argv[2] : "";
  if (mode == "pdh-select" && argc == 5) return pdhSelect(argv[3], argv[4]);
  if (mode == "vm-select") return vmSelect(argc, argv);
  if (mode == "adapter" && argc == 4) return adapter(argv[3]);
  if (mode.rfind("p2p-", 0) == 0 && argc == 3) {
    std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return p2pSelftest(mode, input);
  }
  if (mode == "acs" && argc == 3) {
    std::string config((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    int control = acsControl(config);
    std::printf("%s\n", Obj().integer("control", control).boolean("redirects", acsRedirects(control)).json().c_str());
    return kExitRan;
  }
  if (mode == "iommu" && argc >= 4) {
    emitIommuFacts("p2p", std::vector<std::string>(argv + 3, argv + argc));
    return kExitRan;
  }
  if (mode == "tdr-reason" && argc == 4) {
    std::printf("%s\n", Obj().str("reason", tdrOffWindowsReason("TdrDelay", std::strcmp(argv[3], "wsl") == 0)).json().c_str());
    return kExitRan;
  }
  std::fprintf(stderr, "cudaprobe: selftest takes pdh-select PID LUID|-, vm-select [NAME...], adapter LUID, p2p-topology|p2p-staged|p2p-mig, acs (a configuration space on stdin), iommu BUSID..., or tdr-reason linux|wsl\n");
  return kExitUsage;
}

}  // namespace cp
