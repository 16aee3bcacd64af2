// The ipc-handles probe (C31): each way of sharing device memory with another process, tried
// end to end against the attribute that claims it. This process allocates and fills the memory
// and exports it; a second process (`cudaprobe ipc-import`, started here, one line of request
// on its stdin and one line of answer on its stdout) imports it, maps it, copies it to the host
// and says how many words differ from the pattern and the bytes' checksum. A handle type works
// only when the importer read back exactly what was written: an export that succeeds is not
// yet sharing (NVIDIA/cuda-python#1028, #1045: attributes that claim IPC where it fails).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#ifdef _WIN32
#include <windows.h>
#else
#include <fcntl.h>
#include <unistd.h>
#endif

#include "../capability.hpp"
#include "../emit.hpp"
#include "../gpu.hpp"
#include "../json.hpp"
#include "../probe.hpp"
#include "memory_attempts.hpp"
#include "../process.hpp"

namespace cp {

namespace {

constexpr const char* kMissing = "missing in the driver library";
constexpr size_t kMaxImportBytes = static_cast<size_t>(1) << 30;  // the importer's own bound on a request

enum class Os { Linux, Windows, Both };

struct HandleType {
  const char* feature;
  int handleType;  // CU_MEM_HANDLE_TYPE_*; NONE for legacy IPC (cuIpcGetMemHandle)
  int attribute;   // -1: no attribute speaks for it
  const char* attributeName;
  Os os;                    // where this kind of handle exists
  const char* notHere;      // why it is not tried elsewhere (unless the attribute claims it there)
};

const HandleType kTypes[] = {
    {"posix_fd", CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_ATTR_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
     "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", Os::Linux,
     "POSIX file descriptors are a Linux handle type and the attribute does not claim them here"},
    {"win32", CU_MEM_HANDLE_TYPE_WIN32, CU_ATTR_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED",
     Os::Windows, "Win32 NT handles exist on Windows only and the attribute does not claim them here"},
    {"win32_kmt", CU_MEM_HANDLE_TYPE_WIN32_KMT, CU_ATTR_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED,
     "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED", Os::Windows,
     "Win32 KMT handles exist on Windows only and the attribute does not claim them here"},
    {"fabric", CU_MEM_HANDLE_TYPE_FABRIC, CU_ATTR_HANDLE_TYPE_FABRIC_SUPPORTED, "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED", Os::Linux,
     "fabric handles need IMEX channels, which exist on Linux only, and the attribute does not claim them here"},
    // No attribute claims legacy IPC for memory (CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED is for
    // events); Windows is said not to support it (NVIDIA/cuda-python#1028) but it is tried there too.
    {"legacy_ipc", CU_MEM_HANDLE_TYPE_NONE, -1, "", Os::Both, ""},
};

const HandleType* typeNamed(const std::string& feature) {
  for (const HandleType& t : kTypes) {
    if (feature == t.feature) return &t;
  }
  return nullptr;
}

bool forThisOs(const HandleType& t) { return t.os == Os::Both || (t.os == Os::Windows) == isWindows(); }

// The pattern: a different word at every place and a different one per attempt (the seed), so
// that memory of another attempt, or zeros, never pass for it.
uint32_t patternWord(size_t i, uint32_t seed) { return static_cast<uint32_t>(i * 2654435761u) ^ seed; }

std::string checksumOf(const std::vector<uint32_t>& words) {  // FNV-1a, 64 bits, over the bytes
  uint64_t hash = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(words.data());
  for (size_t i = 0; i < words.size() * sizeof(uint32_t); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string toHex(const void* data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

bool fromHex(const std::string& hex, void* data, size_t size) {
  if (hex.size() != size * 2) return false;
  auto* bytes = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    unsigned value = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &value) != 1) return false;
    bytes[i] = static_cast<unsigned char>(value);
  }
  return true;
}

bool parseHandleNumber(const std::string& text, uint64_t& value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  value = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

// ---- what both sides hold, released on every path ------------------------------------------

// A cuMemCreate allocation mapped into this process. Only what succeeded is undone.
struct VmmMapping {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  bool mapped = false;
  ~VmmMapping() {
    Cuda& c = cuda();
    if (mapped && c.cuMemUnmap) c.cuMemUnmap(ptr, bytes);
    if (ptr && c.cuMemAddressFree) c.cuMemAddressFree(ptr, bytes);
    if (handle && c.cuMemRelease) c.cuMemRelease(handle);
  }
};

struct DeviceMemory {
  CUdeviceptr ptr = 0;
  ~DeviceMemory() {
    if (ptr) cuda().cuMemFree_v2(ptr);
  }
};

struct IpcOpened {
  CUdeviceptr ptr = 0;
  ~IpcOpened() {
    if (ptr && cuda().cuIpcCloseMemHandle) cuda().cuIpcCloseMemHandle(ptr);
  }
};

// An OS handle this process owns: a file descriptor (Linux) or an NT handle (Windows).
struct OwnedOsHandle {
  int fd = -1;
  void* nt = nullptr;
  ~OwnedOsHandle() { release(); }
  void release() {
#ifdef _WIN32
    if (nt) CloseHandle(static_cast<HANDLE>(nt));
#else
    if (fd >= 0) close(fd);
#endif
    fd = -1;
    nt = nullptr;
  }
};

bool needs(Attempt& a, const char* name, bool present) { return a.check(name, present, kMissing); }

// ---- the importer: `cudaprobe ipc-import` ----------------------------------------------------

struct Imported {
  Attempt attempt;  // call and result of the importer's first failure, else its last call
  std::vector<uint32_t> words;
  bool noDriver = false;
};

// Maps an exported allocation into this process (import, reserve, map, access) and copies it out.
void importShareable(const HandleType& t, const Json& request, size_t bytes, CUdevice dev, Imported& out) {
  Cuda& c = cuda();
  Attempt& a = out.attempt;
  if (!needs(a, "cuMemImportFromShareableHandle", c.cuMemImportFromShareableHandle != nullptr) ||
      !needs(a, "cuMemAddressReserve", c.cuMemAddressReserve != nullptr) || !needs(a, "cuMemMap", c.cuMemMap != nullptr) ||
      !needs(a, "cuMemSetAccess", c.cuMemSetAccess != nullptr) || !needs(a, "cuMemUnmap", c.cuMemUnmap != nullptr) ||
      !needs(a, "cuMemAddressFree", c.cuMemAddressFree != nullptr) || !needs(a, "cuMemRelease", c.cuMemRelease != nullptr)) {
    return;
  }
  std::string handleText = request.str("handle");
  OwnedOsHandle owned;  // what was handed to this process is closed once imported
  CUmemFabricHandle fabric{};
  void* osHandle = nullptr;
  if (t.handleType == CU_MEM_HANDLE_TYPE_FABRIC) {
    if (!a.check("read the request", fromHex(handleText, fabric.data, sizeof fabric.data), "the fabric handle is not 64 bytes of hex")) return;
    osHandle = &fabric;
  } else {
    uint64_t value = 0;
    if (!a.check("read the request", parseHandleNumber(handleText, value), "the handle is not a number: " + handleText)) return;
    osHandle = reinterpret_cast<void*>(static_cast<uintptr_t>(value));
#ifdef _WIN32
    if (t.handleType == CU_MEM_HANDLE_TYPE_WIN32) owned.nt = osHandle;  // duplicated into this process by the exporter
#else
    if (t.handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) owned.fd = static_cast<int>(value);  // inherited
#endif
  }
  VmmMapping m;
  m.bytes = bytes;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = dev;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  out.words.assign(bytes / sizeof(uint32_t), 0);
  if (!a.step("cuMemImportFromShareableHandle", c.cuMemImportFromShareableHandle(&m.handle, osHandle, t.handleType))) {
    m.handle = 0;
    return;
  }
  owned.release();
  if (!a.step("cuMemAddressReserve", c.cuMemAddressReserve(&m.ptr, bytes, 0, 0, 0))) {
    m.ptr = 0;
    return;
  }
  if (!a.step("cuMemMap", c.cuMemMap(m.ptr, bytes, 0, m.handle, 0))) return;
  m.mapped = true;
  if (a.step("cuMemSetAccess", c.cuMemSetAccess(m.ptr, bytes, &access, 1)) &&
      a.step("cuMemcpyDtoHAsync", c.cuMemcpyDtoHAsync_v2(out.words.data(), m.ptr, bytes, nullptr))) {
    a.step("cuStreamSynchronize", c.cuStreamSynchronize(nullptr));
  }
}

void importLegacy(const Json& request, size_t bytes, Imported& out) {
  Cuda& c = cuda();
  Attempt& a = out.attempt;
  if (!needs(a, "cuIpcOpenMemHandle_v2", c.cuIpcOpenMemHandle_v2 != nullptr) ||
      !needs(a, "cuIpcCloseMemHandle", c.cuIpcCloseMemHandle != nullptr)) {
    return;
  }
  CUipcMemHandle handle{};
  if (!a.check("read the request", fromHex(request.str("handle"), handle.reserved, sizeof handle.reserved),
               "the IPC handle is not 64 bytes of hex")) {
    return;
  }
  IpcOpened opened;
  out.words.assign(bytes / sizeof(uint32_t), 0);
  if (!a.step("cuIpcOpenMemHandle_v2", c.cuIpcOpenMemHandle_v2(&opened.ptr, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))) {
    opened.ptr = 0;
    return;
  }
  if (a.step("cuMemcpyDtoHAsync", c.cuMemcpyDtoHAsync_v2(out.words.data(), opened.ptr, bytes, nullptr))) {
    a.step("cuStreamSynchronize", c.cuStreamSynchronize(nullptr));
  }
}

// The primary context of `device`, current while it lives.
struct PrimaryContext {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  ~PrimaryContext() {
    if (ctx) cuda().cuDevicePrimaryCtxRelease_v2(dev);
  }
};

void importRequest(int device, const Json& request, Imported& out) {
  Attempt& a = out.attempt;
  Cuda& c = cuda();
  if (!c.ok()) {
    out.noDriver = true;
    a.check("load the driver library", false,
            c.lib ? "the CUDA driver library lacks " + c.missing : "no NVIDIA driver found: the CUDA driver library could not be loaded (" + c.lib.error + ")");
    return;
  }
  CUresult initialised = c.cuInit(0);
  if (initialised != 0) out.noDriver = true;
  if (!a.step("cuInit", initialised)) return;
  const HandleType* t = typeNamed(request.str("handle_type"));
  double bytes = request.num("bytes", 0);
  if (!a.check("read the request", t != nullptr, "unknown handle_type: " + request.str("handle_type")) ||
      !a.check("read the request", bytes >= 4 && bytes <= static_cast<double>(kMaxImportBytes), "bytes must be 4 to 1 GiB")) {
    return;
  }
  PrimaryContext pc;
  if (!a.step("cuDeviceGet", c.cuDeviceGet(&pc.dev, device))) return;
  if (!a.step("cuDevicePrimaryCtxRetain", c.cuDevicePrimaryCtxRetain(&pc.ctx, pc.dev))) {
    pc.ctx = nullptr;
    return;
  }
  if (!a.step("cuCtxSetCurrent", c.cuCtxSetCurrent(pc.ctx))) return;
  size_t size = static_cast<size_t>(bytes) / sizeof(uint32_t) * sizeof(uint32_t);
  if (t->handleType == CU_MEM_HANDLE_TYPE_NONE) importLegacy(request, size, out);
  else importShareable(*t, request, size, pc.dev, out);
}

}  // namespace

// `cudaprobe ipc-import [--device N]`: one request line on stdin ({"handle_type":"posix_fd",
// "bytes":N,"seed":S,"handle":"..."}), one answer line on stdout ({"call":...,"result":...,
// "words":N,"wrong":M,"checksum":"..."}). Exit 3 without a usable driver, 2 for a bad command
// line, else 0 whatever the import did (the answer says).
int runIpcImport(int argc, char** argv) {
  int device = 0;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      char* end = nullptr;
      long parsed = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || parsed < 0) {
        std::fprintf(stderr, "cudaprobe: ipc-import: --device needs a device index, got %s\n", argv[i]);
        return kExitUsage;
      }
      device = static_cast<int>(parsed);
    } else {
      std::fprintf(stderr, "cudaprobe: ipc-import: unknown argument %s (usage: cudaprobe ipc-import [--device N] < request)\n", arg.c_str());
      return kExitUsage;
    }
  }
  Imported imported;
  {
    // The driver first: without one there is nothing to wait for on stdin.
    Cuda& c = cuda();
    std::string line;
    if (!c.ok()) {
      importRequest(device, Json(), imported);
    } else if (!std::getline(std::cin, line)) {
      imported.attempt.check("read the request", false, "no request on stdin");
    } else {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      Json request = Json::parse(line);
      uint32_t seed = static_cast<uint32_t>(request.num("seed", 0));
      importRequest(device, request, imported);
      if (imported.attempt.result.empty() || imported.attempt.result == "CUDA_SUCCESS") {
        size_t wrong = 0;
        for (size_t i = 0; i < imported.words.size(); ++i) wrong += imported.words[i] != patternWord(i, seed);
        Obj answer;
        answer.str("call", imported.attempt.call).str("result", "CUDA_SUCCESS");
        answer.integer("words", static_cast<int64_t>(imported.words.size())).integer("wrong", static_cast<int64_t>(wrong));
        answer.str("checksum", checksumOf(imported.words));
        std::printf("%s\n", answer.json().c_str());
        std::fflush(stdout);
        return kExitRan;
      }
    }
  }
  Obj answer;
  answer.str("call", imported.attempt.call).str("result", imported.attempt.result);
  std::printf("%s\n", answer.json().c_str());
  std::fflush(stdout);
  return imported.noDriver ? kExitNoDriver : kExitRan;
}

namespace {

// ---- the exporter ---------------------------------------------------------------------------

struct Setup {
  ProbeContext& ctx;
  Gpu& gpu;
  size_t bytes;
  double timeoutS;
};

// What the importer is handed: the handle as text, and how it reaches that process.
struct Handoff {
  std::string handle;
  int inheritFd = -1;        // Linux: a copy without close-on-exec, inherited by the importer
  void* ntToDuplicate = nullptr;  // Windows: an NT handle duplicated into the importer once it runs
  ~Handoff() {
#ifndef _WIN32
    if (inheritFd >= 0) close(inheritFd);
#endif
  }
};

// Starts the importer, hands it the handle, and records its answer as the attempt's last calls.
void askImporter(const HandleType& t, const Setup& s, Handoff& handoff, uint32_t seed, const std::vector<uint32_t>& pattern,
                 Attempt& a) {
  Child child;
  std::string error;
  std::vector<std::string> args = {"ipc-import", "--device", std::to_string(s.ctx.device)};
  bool started = child.start(s.ctx.self, args, {}, error);
#ifndef _WIN32
  if (handoff.inheritFd >= 0) close(handoff.inheritFd);  // the importer has its copy now
  handoff.inheritFd = -1;
#endif
  if (!a.check("start the importing process", started, "could not start cudaprobe ipc-import: " + error)) return;
#ifdef _WIN32
  if (handoff.ntToDuplicate) {
    HANDLE process = OpenProcess(PROCESS_DUP_HANDLE, FALSE, static_cast<DWORD>(child.pid()));
    HANDLE theirs = nullptr;
    BOOL duplicated = process && DuplicateHandle(GetCurrentProcess(), static_cast<HANDLE>(handoff.ntToDuplicate), process, &theirs, 0,
                                                 FALSE, DUPLICATE_SAME_ACCESS);
    DWORD lastError = GetLastError();
    if (process) CloseHandle(process);
    if (!a.check("DuplicateHandle", duplicated != FALSE, "DuplicateHandle into the importing process failed: error " + std::to_string(lastError))) {
      child.kill();
      return;
    }
    handoff.handle = std::to_string(reinterpret_cast<uintptr_t>(theirs));
  }
#endif
  Obj request;
  request.str("handle_type", t.feature).integer("bytes", static_cast<int64_t>(pattern.size() * sizeof(uint32_t)));
  request.integer("seed", seed).str("handle", handoff.handle);
  child.writeLine(request.json());  // an importer that already answered (no driver) has closed its stdin: its answer still counts
  std::string line;
  if (!child.readLine(line, s.timeoutS)) {
    bool exited = child.wait(0.5) >= 0;
    if (!exited) child.kill();
    int timeout = static_cast<int>(s.timeoutS);
    a.check("the importing process", false,
            exited ? "the importing process exited with status " + std::to_string(child.wait(0)) + " without answering"
                   : "the importing process did not answer within " + std::to_string(timeout) + " s");
    return;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (child.wait(s.timeoutS) < 0) child.kill();  // it exits once it has answered
  Json answer = Json::parse(line);
  std::string call = answer.str("call") + " (importer)";
  std::string result = answer.str("result");
  if (!a.check(call.c_str(), result == "CUDA_SUCCESS", result.empty() ? "the importing process answered: " + line : result)) return;
  a.step(call.c_str(), 0);
  double words = answer.num("words", -1);
  double wrong = answer.num("wrong", -1);
  std::string expected = checksumOf(pattern);
  bool same = words == static_cast<double>(pattern.size()) && wrong == 0 && answer.str("checksum") == expected;
  a.check("read back (importer)", same,
          "the importing process read " + jsonNumber(wrong) + " of " + jsonNumber(words) + " words wrong (checksum " + answer.str("checksum") +
              ", written " + expected + ")");
}

Attempt begin(const HandleType& t, const Gpu& gpu) {
  Attempt a;
  a.feature = t.feature;
  a.attribute = t.attributeName;
  if (t.attribute >= 0) {
    a.attributeValue = readAttribute(t.attribute, gpu.dev);
    a.claimed = a.attributeValue < 0 ? -1 : a.attributeValue > 0 ? 1 : 0;
  }
  if (!forThisOs(t) && a.claimed != 1) a.notApplicable = t.notHere;
  return a;
}

std::vector<uint32_t> patternFor(size_t bytes, uint32_t seed) {
  std::vector<uint32_t> words(bytes / sizeof(uint32_t));
  for (size_t i = 0; i < words.size(); ++i) words[i] = patternWord(i, seed);
  return words;
}

// cuMemCreate with the handle type requested, mapped and filled here, exported, imported there.
void tryShareable(const HandleType& t, const Setup& s, uint32_t seed, Attempt& a) {
  Cuda& c = cuda();
  if (!needs(a, "cuMemGetAllocationGranularity", c.cuMemGetAllocationGranularity != nullptr) ||
      !needs(a, "cuMemCreate", c.cuMemCreate != nullptr) || !needs(a, "cuMemRelease", c.cuMemRelease != nullptr) ||
      !needs(a, "cuMemAddressReserve", c.cuMemAddressReserve != nullptr) || !needs(a, "cuMemAddressFree", c.cuMemAddressFree != nullptr) ||
      !needs(a, "cuMemMap", c.cuMemMap != nullptr) || !needs(a, "cuMemUnmap", c.cuMemUnmap != nullptr) ||
      !needs(a, "cuMemSetAccess", c.cuMemSetAccess != nullptr) ||
      !needs(a, "cuMemExportToShareableHandle", c.cuMemExportToShareableHandle != nullptr)) {
    return;
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = t.handleType;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = s.gpu.dev;
#ifdef _WIN32
  // An NT handle needs object attributes: cuda.h's field says POBJECT_ATTRIBUTES (its prose
  // elsewhere says LPSECURITYATTRIBUTES), and NVIDIA's samples pass OBJECT_ATTRIBUTES. No name and
  // the default descriptor: the importer gets its handle by DuplicateHandle, not by opening it.
  struct {
    ULONG length;
    HANDLE rootDirectory;
    void* objectName;
    ULONG attributes;
    void* securityDescriptor;
    void* securityQualityOfService;
  } objectAttributes{sizeof objectAttributes, nullptr, nullptr, 0, nullptr, nullptr};
  if (t.handleType == CU_MEM_HANDLE_TYPE_WIN32) prop.win32HandleMetaData = &objectAttributes;
#endif
  size_t granularity = 0;
  if (!a.step("cuMemGetAllocationGranularity", c.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM))) return;
  if (granularity == 0) granularity = 2 * 1024 * 1024;
  size_t bytes = (s.bytes + granularity - 1) / granularity * granularity;
  VmmMapping m;
  m.bytes = bytes;
  if (!a.step("cuMemCreate", c.cuMemCreate(&m.handle, bytes, &prop, 0))) {
    m.handle = 0;
    return;
  }
  if (!a.step("cuMemAddressReserve", c.cuMemAddressReserve(&m.ptr, bytes, granularity, 0, 0))) {
    m.ptr = 0;
    return;
  }
  if (!a.step("cuMemMap", c.cuMemMap(m.ptr, bytes, 0, m.handle, 0))) return;
  m.mapped = true;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = s.gpu.dev;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<uint32_t> pattern = patternFor(bytes, seed);
  if (!a.step("cuMemSetAccess", c.cuMemSetAccess(m.ptr, bytes, &access, 1)) ||
      !a.step("cuMemcpyHtoDAsync", c.cuMemcpyHtoDAsync_v2(m.ptr, pattern.data(), bytes, nullptr)) ||
      !a.step("cuStreamSynchronize", c.cuStreamSynchronize(nullptr))) {
    return;
  }
  // Wide enough for every handle type: an int, a HANDLE, a D3DKMT_HANDLE, a CUmemFabricHandle.
  unsigned char exported[64] = {};
  if (!a.step("cuMemExportToShareableHandle", c.cuMemExportToShareableHandle(exported, m.handle, t.handleType, 0))) return;
  OwnedOsHandle owned;
  Handoff handoff;
  if (t.handleType == CU_MEM_HANDLE_TYPE_FABRIC) {
    handoff.handle = toHex(exported, sizeof(CUmemFabricHandle));
  } else if (t.handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    int fd = 0;
    std::memcpy(&fd, exported, sizeof fd);
    handoff.handle = std::to_string(fd);
#ifndef _WIN32
    owned.fd = fd;
    // The importer inherits a copy (F_DUPFD clears close-on-exec; 3 and up keeps clear of its
    // stdin and stdout, which Child::start replaces).
    handoff.inheritFd = fcntl(fd, F_DUPFD, 3);
    if (!a.check("fcntl(F_DUPFD)", handoff.inheritFd >= 0, std::string("could not copy the file descriptor: ") + std::strerror(errno))) return;
    handoff.handle = std::to_string(handoff.inheritFd);
#endif
  } else if (t.handleType == CU_MEM_HANDLE_TYPE_WIN32) {
    void* nt = nullptr;
    std::memcpy(&nt, exported, sizeof nt);
    handoff.handle = std::to_string(reinterpret_cast<uintptr_t>(nt));
#ifdef _WIN32
    owned.nt = nt;
    handoff.ntToDuplicate = nt;  // the importer's own value is known once it runs
#endif
  } else {  // WIN32_KMT: a global D3DKMT_HANDLE (32 bits), valid in any process as a number
    uint32_t kmt = 0;
    std::memcpy(&kmt, exported, sizeof kmt);
    handoff.handle = std::to_string(kmt);
  }
  askImporter(t, s, handoff, seed, pattern, a);
}

// cuMemAlloc memory, its cuIpcGetMemHandle opened by the importer.
void tryLegacy(const HandleType& t, const Setup& s, uint32_t seed, Attempt& a) {
  Cuda& c = cuda();
  if (!needs(a, "cuIpcGetMemHandle", c.cuIpcGetMemHandle != nullptr)) return;
  DeviceMemory memory;
  std::vector<uint32_t> pattern = patternFor(s.bytes, seed);
  size_t bytes = pattern.size() * sizeof(uint32_t);
  if (!a.step("cuMemAlloc", c.cuMemAlloc_v2(&memory.ptr, bytes))) {
    memory.ptr = 0;
    return;
  }
  if (!a.step("cuMemcpyHtoDAsync", c.cuMemcpyHtoDAsync_v2(memory.ptr, pattern.data(), bytes, nullptr)) ||
      !a.step("cuStreamSynchronize", c.cuStreamSynchronize(nullptr))) {
    return;
  }
  CUipcMemHandle handle{};
  if (!a.step("cuIpcGetMemHandle", c.cuIpcGetMemHandle(&handle, memory.ptr))) return;
  Handoff handoff;
  handoff.handle = toHex(handle.reserved, sizeof handle.reserved);
  askImporter(t, s, handoff, seed, pattern, a);
}

}  // namespace

int ipcHandles(ProbeContext& ctx) {
  double sizeMib = ctx.params.number("size_mib");
  if (!(sizeMib >= 1) || sizeMib > 256) throw UsageError{"parameter size_mib takes 1 to 256 MiB"};
  double timeoutS = ctx.params.number("timeout_s");
  if (!(timeoutS >= 1) || timeoutS > 300) throw UsageError{"parameter timeout_s takes 1 to 300 s"};
  if (!requireDevice(ctx)) return kExitNoDriver;
  Gpu gpu(ctx.device);
  Setup setup{ctx, gpu, static_cast<size_t>(sizeMib * kMiB), timeoutS};
  uint32_t seed = 0x5eed0000u ^ static_cast<uint32_t>(processId());
  std::string lost;  // set once an attempt leaves this process's context unusable: the rest are not tried
  for (const HandleType& t : kTypes) {
    Attempt a = begin(t, gpu);
    seed += 0x9e3779b9u;
    if (!lost.empty()) a.notApplicable = lost;
    if (a.notApplicable.empty()) {
      if (t.handleType == CU_MEM_HANDLE_TYPE_NONE) tryLegacy(t, setup, seed, a);
      else tryShareable(t, setup, seed, a);
    }
    a.done();
    // Only this process's calls can lose its context; the importer's are another process's.
    if (lost.empty() && a.call.find("(importer)") == std::string::npos) lost = lostContext(a);
    emitAttempt(ctx.probe, a);
  }
  return kExitRan;
}

}  // namespace cp
