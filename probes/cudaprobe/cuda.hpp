// The CUDA driver API, the CUDA runtime and NVML, all loaded at run time. The types are
// declared here (ABI-compatible with the official headers) so that the probe builds with
// any C++17 compiler and no CUDA toolkit.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "platform.hpp"

#ifdef _WIN32
#define CP_API __stdcall
#else
#define CP_API
#endif

namespace cp {

// ---- driver API -------------------------------------------------------------------------
typedef int CUresult;  // CUDA_SUCCESS = 0
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
struct CUuuid { unsigned char bytes[16]; };
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle;

// The memory-pool, virtual-memory and IPC structures (CUDA 13.0 cuda.h, ABI-compatible).
struct CUmemLocation {
  int type;  // CU_MEM_LOCATION_TYPE_*
  int id;
};
struct CUmemAllocationProp {
  int type;                  // CU_MEM_ALLOCATION_TYPE_*
  int requestedHandleTypes;  // CU_MEM_HANDLE_TYPE_* bits
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;  // CU_MEM_ACCESS_FLAGS_PROT_*
};
struct CUmemPoolProps {
  int allocType;    // CU_MEM_ALLOCATION_TYPE_*
  int handleTypes;  // CU_MEM_HANDLE_TYPE_* bits
  CUmemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};
struct CUmemPoolPtrExportData { unsigned char reserved[64]; };
struct CUipcMemHandle { char reserved[64]; };
struct CUmemFabricHandle { unsigned char data[64]; };

enum : int {
  CU_MEM_HANDLE_TYPE_NONE = 0x0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
  CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
  CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
  CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
  CU_MEM_LOCATION_TYPE_NONE = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_LOCATION_TYPE_HOST = 0x2,
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
  CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1,
  CU_MEMHOSTREGISTER_PORTABLE = 0x01,
  CU_MEMHOSTREGISTER_DEVICEMAP = 0x02,
  CU_MEMHOSTREGISTER_IOMEMORY = 0x04,
  CU_MEMHOSTREGISTER_READ_ONLY = 0x08,
};

enum : int {
  CU_ATTR_CLOCK_RATE = 13,
  CU_ATTR_KERNEL_EXEC_TIMEOUT = 17,
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_TCC_DRIVER = 35,
  CU_ATTR_PCI_BUS_ID = 33,
  CU_ATTR_PCI_DEVICE_ID = 34,
  CU_ATTR_PCI_DOMAIN_ID = 50,
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
  CU_ATTR_MANAGED_MEMORY = 83,
  CU_ATTR_CONCURRENT_MANAGED_ACCESS = 89,
  CU_ATTR_PAGEABLE_MEMORY_ACCESS = 88,
  CU_ATTR_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91,
  CU_ATTR_HOST_REGISTER_SUPPORTED = 99,
  CU_ATTR_MEMORY_POOLS_SUPPORTED = 115,
  CU_ATTR_CAN_MAP_HOST_MEMORY = 19,
  CU_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  CU_ATTR_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
  CU_ATTR_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED = 104,
  CU_ATTR_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED = 105,
  CU_ATTR_READ_ONLY_HOST_REGISTER_SUPPORTED = 113,
  CU_ATTR_GPU_DIRECT_RDMA_SUPPORTED = 116,
  CU_ATTR_MEMPOOL_SUPPORTED_HANDLE_TYPES = 119,
  CU_ATTR_DMA_BUF_SUPPORTED = 124,
  CU_ATTR_IPC_EVENT_SUPPORTED = 125,
  CU_ATTR_HANDLE_TYPE_FABRIC_SUPPORTED = 128,
  CU_ATTR_HOST_MEMORY_POOLS_SUPPORTED = 144,  // CUDA 13.0: an older driver answers CUDA_ERROR_INVALID_VALUE
  CU_ATTR_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 145,
};

// X-macro: name, return, parameters. Functions marked optional may be absent on old drivers.
#define CP_CUDA_REQUIRED(X)                                                     \
  X(cuInit, CUresult, (unsigned int))                                           \
  X(cuDriverGetVersion, CUresult, (int*))                                       \
  X(cuDeviceGetCount, CUresult, (int*))                                         \
  X(cuDeviceGet, CUresult, (CUdevice*, int))                                    \
  X(cuDeviceGetName, CUresult, (char*, int, CUdevice))                          \
  X(cuDeviceTotalMem_v2, CUresult, (size_t*, CUdevice))                         \
  X(cuDeviceGetAttribute, CUresult, (int*, int, CUdevice))                      \
  X(cuDeviceGetUuid, CUresult, (CUuuid*, CUdevice))                             \
  X(cuGetErrorName, CUresult, (CUresult, const char**))                         \
  X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext*, CUdevice))                 \
  X(cuDevicePrimaryCtxRelease_v2, CUresult, (CUdevice))                         \
  X(cuDevicePrimaryCtxReset_v2, CUresult, (CUdevice))                           \
  X(cuCtxSetCurrent, CUresult, (CUcontext))                                     \
  X(cuCtxSynchronize, CUresult, ())                                             \
  X(cuCtxGetStreamPriorityRange, CUresult, (int*, int*))                        \
  X(cuMemGetInfo_v2, CUresult, (size_t*, size_t*))                              \
  X(cuMemAlloc_v2, CUresult, (CUdeviceptr*, size_t))                            \
  X(cuMemFree_v2, CUresult, (CUdeviceptr))                                      \
  X(cuMemHostAlloc, CUresult, (void**, size_t, unsigned int))                   \
  X(cuMemFreeHost, CUresult, (void*))                                           \
  X(cuMemHostRegister_v2, CUresult, (void*, size_t, unsigned int))              \
  X(cuMemHostUnregister, CUresult, (void*))                                     \
  X(cuMemAllocManaged, CUresult, (CUdeviceptr*, size_t, unsigned int))          \
  X(cuMemsetD32_v2, CUresult, (CUdeviceptr, unsigned int, size_t))              \
  X(cuMemcpyHtoDAsync_v2, CUresult, (CUdeviceptr, const void*, size_t, CUstream)) \
  X(cuMemcpyDtoHAsync_v2, CUresult, (void*, CUdeviceptr, size_t, CUstream))     \
  X(cuModuleLoadData, CUresult, (CUmodule*, const void*))                       \
  X(cuModuleGetFunction, CUresult, (CUfunction*, CUmodule, const char*))        \
  X(cuModuleUnload, CUresult, (CUmodule))                                       \
  X(cuLaunchKernel, CUresult,                                                   \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,    \
     unsigned, CUstream, void**, void**))                                       \
  X(cuStreamCreate, CUresult, (CUstream*, unsigned int))                        \
  X(cuStreamCreateWithPriority, CUresult, (CUstream*, unsigned int, int))       \
  X(cuStreamSynchronize, CUresult, (CUstream))                                  \
  X(cuStreamDestroy_v2, CUresult, (CUstream))                                   \
  X(cuEventCreate, CUresult, (CUevent*, unsigned int))                          \
  X(cuEventRecord, CUresult, (CUevent, CUstream))                               \
  X(cuEventSynchronize, CUresult, (CUevent))                                    \
  X(cuEventQuery, CUresult, (CUevent))                                          \
  X(cuEventElapsedTime, CUresult, (float*, CUevent, CUevent))                   \
  X(cuEventDestroy_v2, CUresult, (CUevent))

#define CP_CUDA_OPTIONAL(X)                                                     \
  X(cuStreamQuery, CUresult, (CUstream))                                        \
  X(cuDeviceGetLuid, CUresult, (char*, unsigned int*, CUdevice))                \
  X(cuStreamBeginCapture_v2, CUresult, (CUstream, int))                         \
  X(cuStreamEndCapture, CUresult, (CUstream, CUgraph*))                         \
  X(cuGraphInstantiateWithFlags, CUresult, (CUgraphExec*, CUgraph, unsigned long long)) \
  X(cuGraphLaunch, CUresult, (CUgraphExec, CUstream))                           \
  X(cuGraphExecDestroy, CUresult, (CUgraphExec))                                \
  X(cuGraphDestroy, CUresult, (CUgraph))                                       \
  X(cuDeviceCanAccessPeer, CUresult, (int*, CUdevice, CUdevice))                \
  X(cuCtxEnablePeerAccess, CUresult, (CUcontext, unsigned int))                 \
  X(cuCtxDisablePeerAccess, CUresult, (CUcontext))                              \
  X(cuMemcpyPeerAsync, CUresult, (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream)) \
  X(cuMemHostGetDevicePointer_v2, CUresult, (CUdeviceptr*, void*, unsigned int))  \
  X(cuDeviceGetDefaultMemPool, CUresult, (CUmemoryPool*, CUdevice))              \
  X(cuDeviceGetMemPool, CUresult, (CUmemoryPool*, CUdevice))                     \
  X(cuMemGetDefaultMemPool, CUresult, (CUmemoryPool*, CUmemLocation*, int))      \
  X(cuMemPoolCreate, CUresult, (CUmemoryPool*, const CUmemPoolProps*))           \
  X(cuMemPoolDestroy, CUresult, (CUmemoryPool))                                  \
  X(cuMemAllocAsync, CUresult, (CUdeviceptr*, size_t, CUstream))                 \
  X(cuMemAllocFromPoolAsync, CUresult, (CUdeviceptr*, size_t, CUmemoryPool, CUstream)) \
  X(cuMemFreeAsync, CUresult, (CUdeviceptr, CUstream))                           \
  X(cuMemPoolExportToShareableHandle, CUresult, (void*, CUmemoryPool, int, unsigned long long)) \
  X(cuMemPoolImportFromShareableHandle, CUresult, (CUmemoryPool*, void*, int, unsigned long long)) \
  X(cuMemPoolExportPointer, CUresult, (CUmemPoolPtrExportData*, CUdeviceptr))   \
  X(cuMemPoolImportPointer, CUresult, (CUdeviceptr*, CUmemoryPool, CUmemPoolPtrExportData*)) \
  X(cuMemGetAllocationGranularity, CUresult, (size_t*, const CUmemAllocationProp*, int)) \
  X(cuMemCreate, CUresult, (CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long)) \
  X(cuMemRelease, CUresult, (CUmemGenericAllocationHandle))                      \
  X(cuMemAddressReserve, CUresult, (CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)) \
  X(cuMemAddressFree, CUresult, (CUdeviceptr, size_t))                           \
  X(cuMemMap, CUresult, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)) \
  X(cuMemUnmap, CUresult, (CUdeviceptr, size_t))                                 \
  X(cuMemSetAccess, CUresult, (CUdeviceptr, size_t, const CUmemAccessDesc*, size_t)) \
  X(cuMemExportToShareableHandle, CUresult, (void*, CUmemGenericAllocationHandle, int, unsigned long long)) \
  X(cuMemImportFromShareableHandle, CUresult, (CUmemGenericAllocationHandle*, void*, int)) \
  X(cuIpcGetMemHandle, CUresult, (CUipcMemHandle*, CUdeviceptr))                 \
  X(cuIpcOpenMemHandle_v2, CUresult, (CUdeviceptr*, CUipcMemHandle, unsigned int)) \
  X(cuIpcCloseMemHandle, CUresult, (CUdeviceptr))

struct Cuda {
  Library lib;
  std::string missing;  // the first required symbol that was not found
#define CP_DECL(name, ret, args) ret(CP_API* name) args = nullptr;
  CP_CUDA_REQUIRED(CP_DECL)
  CP_CUDA_OPTIONAL(CP_DECL)
#undef CP_DECL
  bool ok() const { return lib && missing.empty(); }
  std::string err(CUresult rc) const;  // "CUDA_ERROR_OUT_OF_MEMORY (2)"
};

// Inside WSL2: libcuda.so.1 files in the distribution's library folders that are not WSL's (a
// Linux driver installed there), which the loader path could have found first. Elsewhere empty.
std::vector<std::string> ignoredDriverLibraries();

// Loads the driver library; on failure ok() is false and `lib.error`/`missing` say why.
Cuda& cuda();

// ---- CUDA runtime (optional: a second series beside the driver API) ---------------------
typedef int cudaError_t;
#define CP_CUDART(X)                                                          \
  X(cudaRuntimeGetVersion, cudaError_t, (int*))                               \
  X(cudaGetErrorName, const char*, (cudaError_t))                             \
  X(cudaSetDevice, cudaError_t, (int))                                        \
  X(cudaMallocHost, cudaError_t, (void**, size_t))                            \
  X(cudaFreeHost, cudaError_t, (void*))                                       \
  X(cudaHostRegister, cudaError_t, (void*, size_t, unsigned int))             \
  X(cudaHostUnregister, cudaError_t, (void*))                                 \
  X(cudaMalloc, cudaError_t, (void**, size_t))                                \
  X(cudaFree, cudaError_t, (void*))                                           \
  X(cudaMemGetInfo, cudaError_t, (size_t*, size_t*))                          \
  X(cudaDeviceReset, cudaError_t, ())                                         \
  X(cudaDeviceSynchronize, cudaError_t, ())                                   \
  X(cudaGetLastError, cudaError_t, ())

// The stream-ordered allocator (CUDA 11.2+): absent from older runtimes.
#define CP_CUDART_OPTIONAL(X)                                                 \
  X(cudaMallocAsync, cudaError_t, (void**, size_t, CUstream))                 \
  X(cudaFreeAsync, cudaError_t, (void*, CUstream))                            \
  X(cudaStreamSynchronize, cudaError_t, (CUstream))

struct Cudart {
  Library lib;
  std::string missing;
#define CP_DECL(name, ret, args) ret(CP_API* name) args = nullptr;
  CP_CUDART(CP_DECL)
  CP_CUDART_OPTIONAL(CP_DECL)
#undef CP_DECL
  bool ok() const { return lib && missing.empty(); }
  std::string err(cudaError_t rc) const;
};
Cudart& cudart();

// ---- NVML --------------------------------------------------------------------------------
typedef int nvmlReturn_t;  // NVML_SUCCESS = 0
typedef struct nvmlDevice_st* nvmlDevice_t;
struct nvmlMemory_t { unsigned long long total, free, used; };
struct nvmlPciInfo_t {  // nvmlPciInfo_t of NVML 11+ (the _v3 / _v2 queries below)
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t, used by the _v3 process queries
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

#define CP_NVML_REQUIRED(X)                                                        \
  X(nvmlInit_v2, nvmlReturn_t, ())                                                 \
  X(nvmlShutdown, nvmlReturn_t, ())                                                \
  X(nvmlErrorString, const char*, (nvmlReturn_t))                                  \
  X(nvmlSystemGetDriverVersion, nvmlReturn_t, (char*, unsigned int))               \
  X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int*))                          \
  X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int, nvmlDevice_t*))    \
  X(nvmlDeviceGetHandleByUUID, nvmlReturn_t, (const char*, nvmlDevice_t*))         \
  X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t, char*, unsigned int))          \
  X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t, char*, unsigned int))          \
  X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t*))          \
  X(nvmlDeviceGetCurrPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t, unsigned int*)) \
  X(nvmlDeviceGetCurrPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t, unsigned int*))   \
  X(nvmlDeviceGetMaxPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t, unsigned int*)) \
  X(nvmlDeviceGetMaxPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t, unsigned int*))

#define CP_NVML_OPTIONAL(X)                                                        \
  X(nvmlSystemGetCudaDriverVersion_v2, nvmlReturn_t, (int*))                       \
  X(nvmlDeviceGetDriverModel_v2, nvmlReturn_t, (nvmlDevice_t, int*, int*))         \
  X(nvmlDeviceGetDriverModel, nvmlReturn_t, (nvmlDevice_t, int*, int*))            \
  X(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                         \
    (nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*))                           \
  X(nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t, nvmlPciInfo_t*))         \
  X(nvmlDeviceGetTopologyCommonAncestor, nvmlReturn_t, (nvmlDevice_t, nvmlDevice_t, int*)) \
  X(nvmlDeviceGetP2PStatus, nvmlReturn_t, (nvmlDevice_t, nvmlDevice_t, int, int*)) \
  X(nvmlDeviceGetNvLinkState, nvmlReturn_t, (nvmlDevice_t, unsigned int, int*))    \
  X(nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlReturn_t, (nvmlDevice_t, unsigned int, nvmlPciInfo_t*)) \
  X(nvmlDeviceGetNvLinkRemoteDeviceType, nvmlReturn_t, (nvmlDevice_t, unsigned int, int*)) \
  X(nvmlDeviceGetPcieThroughput, nvmlReturn_t, (nvmlDevice_t, int, unsigned int*)) \
  X(nvmlDeviceGetMigMode, nvmlReturn_t, (nvmlDevice_t, unsigned int*, unsigned int*)) \
  X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t, unsigned int*))   \
  X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t, (nvmlDevice_t, unsigned int, nvmlDevice_t*)) \
  X(nvmlDeviceGetDisplayMode, nvmlReturn_t, (nvmlDevice_t, int*))                   \
  X(nvmlDeviceGetDisplayActive, nvmlReturn_t, (nvmlDevice_t, int*))

struct Nvml {
  Library lib;
  std::string missing;
  nvmlReturn_t initResult = -1;
#define CP_DECL(name, ret, args) ret(CP_API* name) args = nullptr;
  CP_NVML_REQUIRED(CP_DECL)
  CP_NVML_OPTIONAL(CP_DECL)
#undef CP_DECL
  bool ok() const { return lib && missing.empty() && initResult == 0; }
  std::string err(nvmlReturn_t rc) const;
  std::string whyNot() const;  // why ok() is false
};
// Loads and initialises NVML in this process (a forked child must call it again itself).
Nvml& nvml();

// ---- helpers -------------------------------------------------------------------------------
std::string uuidString(const CUuuid& u);  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML prints

// The NVML handle of the same physical GPU as CUDA device `dev` (matched by UUID, since CUDA
// and NVML may number devices differently). Null with `reason` when NVML or the match fails.
nvmlDevice_t nvmlDeviceFor(CUdevice dev, std::string& reason);

// The compute processes NVML lists on `dev` (nvmlDeviceGetComputeRunningProcesses_v3, grown once
// when 64 entries are too few). False, with `reason`, when NVML lacks the call or it fails.
bool nvmlComputeProcesses(nvmlDevice_t dev, std::vector<nvmlProcessInfo_t>& out, std::string& reason);

}  // namespace cp
