#include "memory_attempts.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../platform.hpp"

#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX  // windows.h's min and max macros would break std::max
#endif
#include <windows.h>
#else
#include <unistd.h>
#endif

namespace cp {

void claimFrom(Attempt& a, CUdevice dev, int attribute, const char* name, int bit) {
  a.attribute = name;
  a.attributeValue = readAttribute(attribute, dev);
  if (a.attributeValue < 0) return;  // the driver does not know it: no claim either way
  int value = static_cast<int>(a.attributeValue);
  a.claimed = (bit ? (value & bit) != 0 : value != 0) ? 1 : 0;
}

std::string foreignHandleType(int handleType) {
  if (handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR && isWindows())
    return "a POSIX file descriptor handle is for Linux, and the attribute does not claim it here";
  if ((handleType == CU_MEM_HANDLE_TYPE_WIN32 || handleType == CU_MEM_HANDLE_TYPE_WIN32_KMT) && !isWindows())
    return "a Win32 handle is for Windows, and the attribute does not claim it here";
  return "";
}

bool tryHere(Attempt& a, int handleType) {
  std::string foreign = foreignHandleType(handleType);
  if (foreign.empty() || a.claimed == 1) return true;
  a.notApplicable = foreign;
  return false;
}

void* win32Security(int handleType) {
#ifdef _WIN32
  static SECURITY_ATTRIBUTES defaults = {sizeof(SECURITY_ATTRIBUTES), nullptr, FALSE};
  if (handleType == CU_MEM_HANDLE_TYPE_WIN32) return &defaults;
#else
  (void)handleType;
#endif
  return nullptr;
}

void ShareableHandle::close(int handleType) {
#ifdef _WIN32
  if (handleType == CU_MEM_HANDLE_TYPE_WIN32) {
    HANDLE handle = nullptr;
    std::memcpy(&handle, bytes, sizeof handle);
    if (handle) CloseHandle(handle);
  }
#else
  if (handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    int fd = -1;
    std::memcpy(&fd, bytes, sizeof fd);
    if (fd >= 0) ::close(fd);
  }
#endif
}

bool fillAndReadBack(Attempt& a, Gpu& gpu, CUstream stream, CUdeviceptr ptr, size_t words, unsigned value) {
  Cuda& c = cuda();
  // The fill kernel's arguments, as Gpu::launchFill passes them; launched here so that a refusal
  // is this attempt's step rather than a probe failure.
  unsigned long long count = words;
  void* args[] = {&ptr, &count, &value};
  unsigned grid = static_cast<unsigned>(std::max(1, gpu.sms * 4));
  if (!a.step("cuLaunchKernel", c.cuLaunchKernel(gpu.fill, grid, 1, 1, 256, 1, 1, 0, stream, args, nullptr))) return false;
  std::vector<unsigned> back(words, 0);
  if (!a.step("cuMemcpyDtoHAsync", c.cuMemcpyDtoHAsync_v2(back.data(), ptr, words * 4, stream)) ||
      !a.step("cuStreamSynchronize", c.cuStreamSynchronize(stream)))
    return false;
  size_t wrong = 0;
  for (unsigned word : back) wrong += word != value;
  return a.check("read back", wrong == 0, std::to_string(wrong) + " of " + std::to_string(words) + " words read back differ from the kernel's fill");
}

bool cpuReads(Attempt& a, const char* what, CUdeviceptr ptr, size_t words, unsigned value) {
  const auto* host = reinterpret_cast<const volatile unsigned*>(static_cast<uintptr_t>(ptr));
  size_t wrong = 0;
  for (size_t i = 0; i < words; ++i) wrong += host[i] != value;
  return a.check(what, wrong == 0, std::to_string(wrong) + " of " + std::to_string(words) + " words the CPU read differ from what was written");
}

std::string lostContext(const Attempt& a) {
  // The errors after which a context is unusable until it is destroyed (cuda.h: "the CUDA
  // context cannot be used anymore, and must be destroyed").
  static const char* const kSticky[] = {
      "CUDA_ERROR_ILLEGAL_ADDRESS",       "CUDA_ERROR_LAUNCH_FAILED",   "CUDA_ERROR_HARDWARE_STACK_ERROR",
      "CUDA_ERROR_ILLEGAL_INSTRUCTION",   "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE",
      "CUDA_ERROR_INVALID_PC",            "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
  };
  for (const char* sticky : kSticky) {
    if (a.result == sticky)
      return "not tried: " + a.feature + "'s " + a.call + " returned " + a.result + ", which leaves the CUDA context unusable";
  }
  return "";
}

size_t roundUp(size_t bytes, size_t granularity) {
  if (granularity == 0) return bytes;
  return (bytes + granularity - 1) / granularity * granularity;
}

}  // namespace cp
