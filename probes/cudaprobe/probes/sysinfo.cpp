// The sysinfo probe: what machine, OS, driver and GPU a result belongs to, and which
// environment (linux, wsl2, wsl2-docker, wddm, tcc, mcdm) the probe detected from evidence rather than labels.
#include <cstdio>

#include "../cuda.hpp"
#include "../emit.hpp"
#include "../probe.hpp"
#include "../process.hpp"
#include "../version.hpp"
#include "../winmem.hpp"

namespace cp {

namespace {

const char* kName = "sysinfo";

void info(const char* name, const std::string& v, const char* src) { emitSysinfo(kName, name, v, src); }
void infoNum(const char* name, double v, const char* src) { emitSysinfoNum(kName, name, v, src); }
void infoBool(const char* name, bool v, const char* src) { emitSysinfoBool(kName, name, v, src); }
void infoNull(const char* name, const std::string& reason) { emitSysinfoNull(kName, name, reason); }

std::string cudaVersionString(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

// NVML's driver model values; NVML reports them only on Windows.
const char* driverModelName(int m) {
  switch (m) {
    case 0: return "wddm";
    case 1: return "tcc";
    case 2: return "mcdm";
    default: return nullptr;
  }
}

struct Detected {
  std::string environment;  // "" when it cannot be decided
  std::string evidence;
};

void reportOs(const OsInfo& os) {
  info("os_family", os.family, "os");
  info("os_name", os.name, "os");
  if (!os.kernel.empty()) info("kernel", os.kernel, os.family == "windows" ? "RtlGetVersion" : "uname");
  if (os.build >= 0) infoNum("os_build", static_cast<double>(os.build), "RtlGetVersion");
  else infoNull("os_build", "Windows build numbers exist only on Windows");
  info("arch", os.arch, "os");
  // The host's memory: what a record's pinned amounts are bounded by (behaviour/plausibility.ts).
  Reading host = systemTotal();
  if (host.ok()) infoNum("host_memory_total_bytes", host.value, os.family == "windows" ? "GlobalMemoryStatusEx" : "/proc/meminfo MemTotal");
  else infoNull("host_memory_total_bytes", host.reason);
  if (os.family == "windows") {
    if (!os.wine.empty()) info("wine_version", os.wine, "ntdll wine_get_version");
    else infoNull("wine_version", "not running under Wine");
  }
}

void reportRuntime() {
  Cudart& r = cudart();
  infoBool("cudart_found", r.ok(), "loader");
  if (!r.ok()) {
    infoNull("cudart_version", r.lib ? "runtime library lacks " + r.missing : "CUDA runtime library not found (" + r.lib.error + ")");
    return;
  }
  info("cudart_library", r.lib.path, "loader");
  int v = 0;
  int rc = r.cudaRuntimeGetVersion(&v);
  if (rc == 0) info("cudart_version", cudaVersionString(v), "cudaRuntimeGetVersion");
  else infoNull("cudart_version", "cudaRuntimeGetVersion failed: " + r.err(rc));
}

// Everything that needs the driver. Returns false when no usable driver or device is found.
bool reportDriverAndGpu(int device, const OsInfo& os, std::string& driverModel, std::string& whyNoDriver, DeviceAdapter& adapter) {
  Cuda& c = cuda();
  Nvml& n = nvml();

  infoBool("nvml_found", n.ok(), "loader");
  if (n.ok()) {
    char ver[96] = {0};
    nvmlReturn_t nr = n.nvmlSystemGetDriverVersion(ver, sizeof ver);
    if (nr == 0) info("driver_version", ver, "nvml");
    else infoNull("driver_version", n.err(nr));
  } else {
    infoNull("driver_version", n.whyNot());
  }

  infoBool("driver_found", c.ok(), "loader");
  if (!c.ok()) {
    whyNoDriver = c.lib ? "the CUDA driver library " + c.lib.path + " lacks " + c.missing
                        : "no NVIDIA driver found: the CUDA driver library could not be loaded (" + c.lib.error + ")";
    infoNull("cuda_driver_version", whyNoDriver);
    return false;
  }
  info("driver_library", c.lib.path, "loader");
  int dv = 0;
  if (c.cuDriverGetVersion(&dv) == 0) info("cuda_driver_version", cudaVersionString(dv), "cuDriverGetVersion");
  CUresult rc = c.cuInit(0);
  if (rc != 0) {
    whyNoDriver = "cuInit failed: " + c.err(rc) + " (the driver is installed but no usable GPU was found)";
    infoNull("device_count", whyNoDriver);
    return false;
  }
  int count = 0;
  c.cuDeviceGetCount(&count);
  infoNum("device_count", count, "cuDeviceGetCount");
  if (device < 0 || device >= count) {
    whyNoDriver = count == 0 ? "the driver reports no CUDA device"
                             : "device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " present)";
    return false;
  }
  CUdevice dev = 0;
  c.cuDeviceGet(&dev, device);
  infoNum("gpu_index", device, "cuDeviceGet");
  char name[256] = {0};
  if (c.cuDeviceGetName(name, sizeof name, dev) == 0) info("gpu_name", name, "cuDeviceGetName");
  CUuuid u{};
  if (c.cuDeviceGetUuid(&u, dev) == 0) info("gpu_uuid", uuidString(u), "cuDeviceGetUuid");
  int major = 0, minor = 0;
  c.cuDeviceGetAttribute(&major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, dev);
  c.cuDeviceGetAttribute(&minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR, dev);
  info("compute_capability", std::to_string(major) + "." + std::to_string(minor), "cuDeviceGetAttribute");
  size_t total = 0;
  if (c.cuDeviceTotalMem_v2(&total, dev) == 0) infoNum("memory_total_bytes", static_cast<double>(total), "cuDeviceTotalMem");
  int sms = 0;
  if (c.cuDeviceGetAttribute(&sms, CU_ATTR_MULTIPROCESSOR_COUNT, dev) == 0) infoNum("multiprocessors", sms, "cuDeviceGetAttribute");
  int domain = 0, bus = 0, slot = 0;
  c.cuDeviceGetAttribute(&domain, CU_ATTR_PCI_DOMAIN_ID, dev);
  c.cuDeviceGetAttribute(&bus, CU_ATTR_PCI_BUS_ID, dev);
  c.cuDeviceGetAttribute(&slot, CU_ATTR_PCI_DEVICE_ID, dev);
  char busId[32];
  std::snprintf(busId, sizeof busId, "%04x:%02x:%02x.0", domain, bus, slot);
  info("pci_bus_id", busId, "cuDeviceGetAttribute");
  int tcc = 0;
  if (c.cuDeviceGetAttribute(&tcc, CU_ATTR_TCC_DRIVER, dev) == 0) infoBool("tcc_driver", tcc == 1, "CU_DEVICE_ATTRIBUTE_TCC_DRIVER");

  std::string why;
  nvmlDevice_t h = nvmlDeviceFor(dev, why);
  struct Link { const char* name; nvmlReturn_t(CP_API* fn)(nvmlDevice_t, unsigned int*); };
  const Link links[] = {
      {"pcie_gen_current", h ? n.nvmlDeviceGetCurrPcieLinkGeneration : nullptr},
      {"pcie_width_current", h ? n.nvmlDeviceGetCurrPcieLinkWidth : nullptr},
      {"pcie_gen_max", h ? n.nvmlDeviceGetMaxPcieLinkGeneration : nullptr},
      {"pcie_width_max", h ? n.nvmlDeviceGetMaxPcieLinkWidth : nullptr},
  };
  for (const auto& l : links) {
    unsigned int v = 0;
    nvmlReturn_t nr = l.fn ? l.fn(h, &v) : -1;
    if (nr == 0) infoNum(l.name, v, "nvml");
    else infoNull(l.name, l.fn ? n.err(nr) : why);
  }

  // Whether a display is attached (C28: a desktop's GPU also composes the screen): NVML's display
  // mode (a monitor on a connector) and display active (a display initialised on the GPU).
  struct Display { const char* name; nvmlReturn_t(CP_API* fn)(nvmlDevice_t, int*); const char* what; };
  const Display displays[] = {
      {"display_attached", h ? n.nvmlDeviceGetDisplayMode : nullptr, "nvmlDeviceGetDisplayMode"},
      {"display_active", h ? n.nvmlDeviceGetDisplayActive : nullptr, "nvmlDeviceGetDisplayActive"},
  };
  for (const auto& d : displays) {
    int on = 0;
    nvmlReturn_t nr = d.fn ? d.fn(h, &on) : -1;
    if (nr == 0) infoBool(d.name, on == 1, d.what);
    else infoNull(d.name, !h ? why : d.fn ? n.err(nr) : std::string("NVML lacks ") + d.what);
  }

  // Driver model: NVML answers on Windows only; on Linux it returns an error, recorded as such.
  auto modelFn = n.nvmlDeviceGetDriverModel_v2 ? n.nvmlDeviceGetDriverModel_v2 : n.nvmlDeviceGetDriverModel;
  if (!h) {
    infoNull("driver_model", why);
  } else if (!modelFn) {
    infoNull("driver_model", "NVML lacks nvmlDeviceGetDriverModel");
  } else {
    int current = -1, pending = -1;
    nvmlReturn_t nr = modelFn(h, &current, &pending);
    if (nr == 0 && driverModelName(current)) {
      driverModel = driverModelName(current);
      info("driver_model", driverModel, "nvmlDeviceGetDriverModel");
      if (driverModelName(pending)) info("driver_model_pending", driverModelName(pending), "nvmlDeviceGetDriverModel");
    } else {
      infoNull("driver_model", nr == 0 ? "unknown driver model " + std::to_string(current) : n.err(nr) + (os.family == "linux" ? " (NVML reports driver models on Windows only)" : ""));
    }
  }
  if (h) {
    nvmlMemory_t mem{};
    nvmlReturn_t nr = n.nvmlDeviceGetMemoryInfo(h, &mem);
    if (nr == 0) infoNum("nvml_memory_total_bytes", static_cast<double>(mem.total), "nvmlDeviceGetMemoryInfo");
  }
  if (os.family == "windows" && driverModel.empty() && tcc == 1) driverModel = "tcc";
  adapter = deviceAdapter(dev, true);
  return true;
}

Detected detect(const OsInfo& os, const WslInfo& wsl, const ContainerInfo& container, const std::string& driverModel, bool driverOk) {
  if (os.family == "linux") {
    if (!wsl.isWsl) return {"linux", "Linux kernel without WSL markers"};
    // A container on WSL2 (Docker Desktop, or an engine inside a distribution) is its own class:
    // it is reported to pin far less than the distribution itself (microsoft/WSL#14078).
    if (wsl.version == 2 && !container.kind.empty()) return {"wsl2-docker", wsl.evidence + "; in a " + container.kind + " container (" + container.evidence + ")"};
    if (wsl.version == 2) return {"wsl2", wsl.evidence};
    return {"", "WSL1 (" + wsl.evidence + "): CUDA needs WSL2"};
  }
  if (!driverModel.empty()) return {driverModel, "driver model reported by NVML or the TCC attribute"};
  if (!driverOk) return {"", "Windows without a usable NVIDIA driver: the driver model cannot be read"};
  return {"", "Windows, but neither NVML nor the TCC attribute says which driver model is active"};
}

}  // namespace

int sysinfo(ProbeContext& ctx) {
  info("tool_version", kCudaprobeVersion, "cudaprobe");
  OsInfo os = osInfo();
  reportOs(os);
  WslInfo wsl = wslInfo();
  ContainerInfo ci = containerInfo();
  if (os.family == "linux") {
    infoBool("wsl", wsl.isWsl, wsl.isWsl ? wsl.evidence.c_str() : "no WSL markers");
    if (wsl.isWsl) infoNum("wsl_version", wsl.version, wsl.evidence.c_str());
    else infoNull("wsl_version", "not running under WSL");
    if (wsl.isWsl && wsl.version == 2) {
      std::vector<std::string> other = ignoredDriverLibraries();
      std::string list;
      for (const auto& p : other) list += (list.empty() ? "" : ", ") + p;
      if (other.empty()) infoNull("driver_library_ignored", "no other libcuda.so.1 in the distribution's library folders");
      else info("driver_library_ignored", list, "WSL2 uses /usr/lib/wsl/lib/libcuda.so.1; a Linux driver installed in the distribution cannot drive the GPU");
    }
    if (ci.kind.empty()) {
      infoNull("container", "no container markers (/.dockerenv, /run/.containerenv, /proc/1/cgroup)");
    } else {
      info("container", ci.kind, ci.evidence.c_str());
      if (ci.nvidiaRuntime.empty()) infoNull("container_runtime", "no NVIDIA container runtime markers");
      else info("container_runtime", "nvidia", ci.nvidiaRuntime.c_str());
    }
  }
  // The registry setting (it takes effect at the next boot, and only where the driver supports
  // it); whether the scheduler runs now is hags_enabled, per adapter, below.
  std::string hagsReason;
  int hags = hwSchMode(hagsReason);
  if (hags >= 0) infoBool("hags_setting", hags == 2, "registry HwSchMode");
  else infoNull("hags_setting", hagsReason);

  reportRuntime();
  std::string driverModel, whyNoDriver;
  DeviceAdapter adapter = deviceAdapter(0, false);
  bool ok = reportDriverAndGpu(ctx.device, os, driverModel, whyNoDriver, adapter);
  if (os.family == "windows") {
    std::string why;
    int on = hwSchedulerEnabled(adapter, why);
    if (on >= 0) infoBool("hags_enabled", on == 1, "D3DKMTQueryAdapterInfo KMTQAITYPE_WDDM_2_7_CAPS HwSchEnabled");
    else infoNull("hags_enabled", why);
  }
  Detected d = detect(os, wsl, ci, driverModel, ok);
  if (!d.environment.empty()) info("environment", d.environment, d.evidence.c_str());
  else infoNull("environment", d.evidence);
  if (!ok) {
    emitSkip(kName, whyNoDriver, "gpu");
    return kExitNoDriver;
  }
  return kExitRan;
}

}  // namespace cp
