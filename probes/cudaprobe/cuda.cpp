#include "cuda.hpp"

#include <climits>
#include <cstdio>
#include <cstdlib>

namespace cp {

// Each loader below names its table `s`; these bind one X-macro entry into it.
#define CP_BIND_REQ(name, ret, args) bind(s.lib, #name, s.name, &s.missing);
#define CP_BIND_OPT(name, ret, args) bind(s.lib, #name, s.name, nullptr);

template <typename Fn>
static void bind(const Library& lib, const char* name, Fn& fn, std::string* missing) {
  fn = reinterpret_cast<Fn>(lib.symbol(name));
  if (!fn && missing && missing->empty()) *missing = name;
}

static const char* kWslDriver = "/usr/lib/wsl/lib/libcuda.so.1";

static bool inWsl2() {
  WslInfo w = wslInfo();
  return w.isWsl && w.version == 2;
}

static std::vector<std::string> driverCandidates() {
  if (isWindows()) return {"nvcuda.dll"};
  // Inside WSL2 the driver is Windows', reached through /usr/lib/wsl/lib: a Linux driver wrongly
  // installed in the distribution cannot drive the GPU there, and the loader path may find it first.
  if (inWsl2()) return {kWslDriver, "libcuda.so.1", "libcuda.so"};
  return {"libcuda.so.1", "libcuda.so", kWslDriver};
}

std::vector<std::string> ignoredDriverLibraries() {
  std::vector<std::string> found;
#ifndef _WIN32
  if (!inWsl2()) return found;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"}) {
    std::string path = std::string(dir) + "/libcuda.so.1";
    char real[PATH_MAX];
    if (!fileExists(path) || !realpath(path.c_str(), real)) continue;
    // A link into /usr/lib/wsl is WSL's own.
    if (std::string(real).rfind("/usr/lib/wsl/", 0) != 0) found.push_back(path);
  }
#endif
  return found;
}

Cuda& cuda() {
  static Cuda cached = [] {
    Cuda s;
    s.lib = openFirst(driverCandidates());
    if (!s.lib) return s;
    CP_CUDA_REQUIRED(CP_BIND_REQ)
    CP_CUDA_OPTIONAL(CP_BIND_OPT)
    return s;
  }();
  return cached;
}

std::string Cuda::err(CUresult rc) const {
  const char* name = nullptr;
  if (cuGetErrorName) cuGetErrorName(rc, &name);
  return std::string(name ? name : "CUDA_ERROR") + " (" + std::to_string(rc) + ")";
}

static std::vector<std::string> cudartCandidates() {
  if (isWindows()) {
    return {"cudart64_13.dll", "cudart64_12.dll", "cudart64_110.dll", "cudart64_102.dll"};
  }
  std::vector<std::string> c = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  for (const char* dir : {"/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"}) {
    for (const char* v : {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}) c.push_back(std::string(dir) + v);
  }
  return c;
}

Cudart& cudart() {
  static Cudart cached = [] {
    Cudart s;
    std::string override = getEnv("CUDAPROBE_CUDART");  // an explicit library wins
    s.lib = override.empty() ? openFirst(cudartCandidates()) : openFirst({override});
    if (!s.lib) return s;
    CP_CUDART(CP_BIND_REQ)
    CP_CUDART_OPTIONAL(CP_BIND_OPT)
    return s;
  }();
  return cached;
}

std::string Cudart::err(cudaError_t rc) const {
  const char* name = cudaGetErrorName ? cudaGetErrorName(rc) : nullptr;
  return std::string(name ? name : "cudaError") + " (" + std::to_string(rc) + ")";
}

static std::vector<std::string> nvmlCandidates() {
  if (isWindows()) {
    return {"nvml.dll", "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvml.dll"};
  }
  return {"libnvidia-ml.so.1", "libnvidia-ml.so", "/usr/lib/wsl/lib/libnvidia-ml.so.1"};
}

Nvml& nvml() {
  static Nvml cached = [] {
    Nvml s;
    s.lib = openFirst(nvmlCandidates());
    if (!s.lib) return s;
    CP_NVML_REQUIRED(CP_BIND_REQ)
    CP_NVML_OPTIONAL(CP_BIND_OPT)
    if (s.missing.empty()) s.initResult = s.nvmlInit_v2();
    return s;
  }();
  return cached;
}

std::string Nvml::err(nvmlReturn_t rc) const {
  const char* s = nvmlErrorString ? nvmlErrorString(rc) : nullptr;
  return std::string("NVML: ") + (s ? s : "error") + " (" + std::to_string(rc) + ")";
}

std::string Nvml::whyNot() const {
  if (!lib) return "NVML library not found (" + lib.error + ")";
  if (!missing.empty()) return "NVML library lacks " + missing;
  if (initResult != 0) return "nvmlInit failed: " + err(initResult);
  return "";
}

std::string uuidString(const CUuuid& u) {
  char buf[64];
  const unsigned char* b = u.bytes;
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

nvmlDevice_t nvmlDeviceFor(CUdevice dev, std::string& reason) {
  Nvml& n = nvml();
  if (!n.ok()) {
    reason = n.whyNot();
    return nullptr;
  }
  Cuda& c = cuda();
  CUuuid u{};
  CUresult rc = c.cuDeviceGetUuid(&u, dev);
  if (rc != 0) {
    reason = "cuDeviceGetUuid failed: " + c.err(rc);
    return nullptr;
  }
  nvmlDevice_t h = nullptr;
  nvmlReturn_t nr = n.nvmlDeviceGetHandleByUUID(uuidString(u).c_str(), &h);
  if (nr != 0) {
    reason = "nvmlDeviceGetHandleByUUID(" + uuidString(u) + "): " + n.err(nr);
    return nullptr;
  }
  return h;
}

bool nvmlComputeProcesses(nvmlDevice_t dev, std::vector<nvmlProcessInfo_t>& out, std::string& reason) {
  Nvml& n = nvml();
  if (!n.nvmlDeviceGetComputeRunningProcesses_v3) {
    reason = "NVML lacks nvmlDeviceGetComputeRunningProcesses_v3";
    return false;
  }
  out.assign(64, nvmlProcessInfo_t{});
  unsigned int count = static_cast<unsigned int>(out.size());
  nvmlReturn_t rc = n.nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, out.data());
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    out.assign(count + 16, nvmlProcessInfo_t{});
    count = static_cast<unsigned int>(out.size());
    rc = n.nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, out.data());
  }
  if (rc != 0) {
    reason = n.err(rc);
    out.clear();
    return false;
  }
  out.resize(count);
  return true;
}

}  // namespace cp
