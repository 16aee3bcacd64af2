// What the memory-pools and virtual-memory probes share (issue 36): the attribute that claims a
// feature, the platform a shareable handle type belongs to, the exported handle closed again,
// and a kernel's fill read back, each call recorded as a step of the Attempt rather than thrown,
// so that one feature's failure is that feature's evidence and the others are still tried.
#pragma once
#include <cstddef>
#include <string>

#include "../capability.hpp"
#include "../gpu.hpp"

namespace cp {

// Reads `attribute` into the attempt: claimed when its value is non-zero, or, with `bit`, when
// that bit is set (MEMPOOL_SUPPORTED_HANDLE_TYPES). A driver that does not know the attribute
// (CUDA 13's HOST_MEMORY_POOLS_SUPPORTED on an older one) leaves claimed at -1.
void claimFrom(Attempt& a, CUdevice dev, int attribute, const char* name, int bit = 0);

// Why a shareable handle type is not for this platform ("" where it is): a POSIX file
// descriptor belongs to Linux (WSL 2 included), Win32 and KMT handles to Windows; fabric
// handles are tried everywhere.
std::string foreignHandleType(int handleType);

// The platform rule: a handle type that is not for this platform is not tried (the fact is
// null with the reason) unless the attribute claims it: a claim is always tried. Returns
// whether to try it.
bool tryHere(Attempt& a, int handleType);

// What a Win32 handle is created with (CUmemPoolProps::win32SecurityAttributes,
// CUmemAllocationProp::win32HandleMetaData): a SECURITY_ATTRIBUTES with the default security
// descriptor, not inherited, as NVIDIA's samples pass one; nullptr for other types and off Windows.
void* win32Security(int handleType);

// A shareable handle as an export writes it: room for each type (an int fd, a HANDLE, a
// D3DKMT_HANDLE, a 64-byte CUmemFabricHandle).
struct ShareableHandle {
  unsigned char bytes[64] = {};
  void* out() { return bytes; }
  // Closes a POSIX fd or a Win32 handle; a KMT handle is not reference-counted and a fabric
  // handle is plain data, so neither has anything to close.
  void close(int handleType);
};

// Fills `words` 32-bit words at `ptr` with `value` by the fill kernel on `stream`, copies them
// back and checks every word; each call a step of `a`. Returns whether all went right.
bool fillAndReadBack(Attempt& a, Gpu& gpu, CUstream stream, CUdeviceptr ptr, size_t words, unsigned value);

// Checks `words` 32-bit words at a host-visible address on the CPU.
bool cpuReads(Attempt& a, const char* what, CUdeviceptr ptr, size_t words, unsigned value);

// When the attempt ended with an error that leaves the CUDA context unusable (a kernel's fault:
// CUDA_ERROR_ILLEGAL_ADDRESS and the like), why the attempts after it are not tried; else "".
std::string lostContext(const Attempt& a);

// Bytes rounded up to a multiple of `granularity`.
size_t roundUp(size_t bytes, size_t granularity);

}  // namespace cp
