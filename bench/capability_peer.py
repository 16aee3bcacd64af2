"""The peer of bench/capability-check: issue 36's capability facts decided again without cudaprobe,
through the CUDA driver library itself (ctypes: no compiler, no torch, no cuda-python). For each
feature it reads the same device attribute and makes its own calls on its own buffers: mmap'd
host memory for registration, cuMemsetD32 instead of a kernel, cuMemcpyDtoH to read back, and for
IPC a second Python process (this file, `import`) that imports the handle (a POSIX fd passed with
pass_fds; fabric and legacy handles as hex) and answers with the SHA-256 of what it read. Also
pinned-ceiling's failure_poisons (pin until a pin fails, then a sixteenth of a chunk) and p2p's
IOMMU mode, ACS redirect (read from sysfs and the bridges' configuration space here) and peer
override variables. Prints one JSON object:

  {"features": {"host-register-flags.portable": {"value", "claimed", "attribute_value", "call",
   "result", "reason"}, ...}, "iommu": {"p2p.iommu_mode": {"value", "reason", ...}, ...}}

  python3 bench/capability_peer.py [--size-mib 16] [--pin-max-gib 2] [--pin-chunk-mib 256]
                                   [--pin-max-fraction 0.5] [--device 0]

Without a driver it prints {"skipped": reason} and exits 0. Linux only (Windows-only handle
types are null with the reason, as they are in cudaprobe on Linux).
"""
import argparse
import ctypes
import hashlib
import json
import mmap
import os
import struct
import subprocess
import sys

CUdeviceptr = ctypes.c_uint64
c_size = ctypes.c_size_t
c_int_p = ctypes.POINTER(ctypes.c_int)
MiB = 1 << 20
GiB = 1 << 30

# cuda.h's numbers, written out here from the header (not from cudaprobe's sources).
ATTR = {
    "CAN_MAP_HOST_MEMORY": 19,
    "HOST_REGISTER_SUPPORTED": 99,
    "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED": 102,
    "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED": 103,
    "HANDLE_TYPE_WIN32_HANDLE_SUPPORTED": 104,
    "HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED": 105,
    "READ_ONLY_HOST_REGISTER_SUPPORTED": 113,
    "MEMORY_POOLS_SUPPORTED": 115,
    "MEMPOOL_SUPPORTED_HANDLE_TYPES": 119,
    "HANDLE_TYPE_FABRIC_SUPPORTED": 128,
    "HOST_MEMORY_POOLS_SUPPORTED": 144,
    "HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED": 145,
}
HANDLE_NONE, HANDLE_POSIX_FD, HANDLE_WIN32, HANDLE_WIN32_KMT, HANDLE_FABRIC = 0, 1, 2, 4, 8
LOC_NONE, LOC_DEVICE, LOC_HOST = 0, 1, 2
ALLOC_PINNED, ALLOC_MANAGED = 1, 2
PROT_READWRITE = 3
# After these the context is unusable (cuda.h: "must be destroyed"): the rest of a probe's features are null.
STICKY = {
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_CONTEXT_IS_DESTROYED",
}
MISSING = "missing in the driver library"


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte), ("usage", ctypes.c_ushort),
                ("reserved", ctypes.c_ubyte * 4)]


class AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", AllocFlags)]


class PoolProps(ctypes.Structure):
    _fields_ = [("allocType", ctypes.c_int), ("handleTypes", ctypes.c_int), ("location", Location),
                ("win32SecurityAttributes", ctypes.c_void_p), ("maxSize", c_size), ("usage", ctypes.c_ushort),
                ("reserved", ctypes.c_ubyte * 54)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


class Handle64(ctypes.Structure):  # CUipcMemHandle and CUmemFabricHandle: 64 opaque bytes
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


def emit(obj, code=0):
    print(json.dumps(obj))
    sys.exit(code)


def load_driver():
    for name in ("libcuda.so.1", "libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class Driver:
    """The entry points with their argument types; one an old driver lacks is None."""

    SIGNATURES = {
        "cuInit": [ctypes.c_uint],
        "cuDeviceGet": [c_int_p, ctypes.c_int],
        "cuDeviceGetCount": [c_int_p],
        "cuDeviceGetAttribute": [c_int_p, ctypes.c_int, ctypes.c_int],
        "cuDeviceGetPCIBusId": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
        "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
        "cuCtxSetCurrent": [ctypes.c_void_p],
        "cuCtxSynchronize": [],
        "cuMemAlloc_v2": [ctypes.POINTER(CUdeviceptr), c_size],
        "cuMemFree_v2": [CUdeviceptr],
        "cuMemsetD32_v2": [CUdeviceptr, ctypes.c_uint, c_size],
        "cuMemcpyHtoD_v2": [CUdeviceptr, ctypes.c_void_p, c_size],
        "cuMemcpyDtoH_v2": [ctypes.c_void_p, CUdeviceptr, c_size],
        "cuMemHostAlloc": [ctypes.POINTER(ctypes.c_void_p), c_size, ctypes.c_uint],
        "cuMemFreeHost": [ctypes.c_void_p],
        "cuMemHostRegister_v2": [ctypes.c_void_p, c_size, ctypes.c_uint],
        "cuMemHostUnregister": [ctypes.c_void_p],
        "cuMemHostGetDevicePointer_v2": [ctypes.POINTER(CUdeviceptr), ctypes.c_void_p, ctypes.c_uint],
        "cuDeviceGetDefaultMemPool": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
        "cuMemAllocAsync": [ctypes.POINTER(CUdeviceptr), c_size, ctypes.c_void_p],
        "cuMemAllocFromPoolAsync": [ctypes.POINTER(CUdeviceptr), c_size, ctypes.c_void_p, ctypes.c_void_p],
        "cuMemFreeAsync": [CUdeviceptr, ctypes.c_void_p],
        "cuMemPoolCreate": [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(PoolProps)],
        "cuMemPoolDestroy": [ctypes.c_void_p],
        "cuMemPoolExportToShareableHandle": [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_ulonglong],
        "cuMemGetAllocationGranularity": [ctypes.POINTER(c_size), ctypes.POINTER(AllocationProp), ctypes.c_int],
        "cuMemCreate": [ctypes.POINTER(ctypes.c_ulonglong), c_size, ctypes.POINTER(AllocationProp), ctypes.c_ulonglong],
        "cuMemRelease": [ctypes.c_ulonglong],
        "cuMemAddressReserve": [ctypes.POINTER(CUdeviceptr), c_size, c_size, CUdeviceptr, ctypes.c_ulonglong],
        "cuMemAddressFree": [CUdeviceptr, c_size],
        "cuMemMap": [CUdeviceptr, c_size, c_size, ctypes.c_ulonglong, ctypes.c_ulonglong],
        "cuMemUnmap": [CUdeviceptr, c_size],
        "cuMemSetAccess": [CUdeviceptr, c_size, ctypes.POINTER(AccessDesc), c_size],
        "cuMemExportToShareableHandle": [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_ulonglong],
        "cuMemImportFromShareableHandle": [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_void_p, ctypes.c_int],
        "cuIpcGetMemHandle": [ctypes.POINTER(Handle64), CUdeviceptr],
        "cuIpcOpenMemHandle_v2": [ctypes.POINTER(CUdeviceptr), Handle64, ctypes.c_uint],
        "cuIpcCloseMemHandle": [CUdeviceptr],
    }

    def __init__(self, lib):
        for name, argtypes in self.SIGNATURES.items():
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = argtypes
                fn.restype = ctypes.c_int
            setattr(self, name, fn)

    def error_name(self, rc):
        if rc == 0:
            return "CUDA_SUCCESS"
        name = ctypes.c_char_p()
        if self.cuGetErrorName is not None and self.cuGetErrorName(rc, ctypes.byref(name)) == 0 and name.value:
            return name.value.decode()
        return f"CUDA_ERROR_{rc}"


class Attempt:
    """One feature: the first failing call decides, else the last call made."""

    def __init__(self, feature):
        self.feature = feature
        self.claimed = None
        self.attribute_value = None
        self.call = ""
        self.result = ""
        self.reason = ""  # set: the feature is not tried here (null)

    def failed(self):
        return self.result not in ("", "CUDA_SUCCESS")

    def step(self, name, fn, *args):
        """Calls fn (a driver entry point) unless an earlier call failed; None is a missing entry point."""
        if self.failed():
            return False
        if fn is None:
            return self.check(name, False, MISSING)
        rc = fn(*args)
        self.call, self.result = name, cu.error_name(rc)
        return rc == 0

    def cleanup(self, name, fn, *args):
        """A release call: made whatever happened before, recorded only while nothing failed."""
        if fn is None:
            return self.check(name, False, MISSING)
        rc = fn(*args)
        if not self.failed():
            self.call, self.result = name, cu.error_name(rc)
        return rc == 0

    def check(self, name, ok, what):
        if self.failed():
            return False
        if not ok:
            self.call, self.result = name, what
        return ok

    def claim_from(self, attribute, bit=0):
        value = ctypes.c_int()
        if cu.cuDeviceGetAttribute(ctypes.byref(value), ATTR[attribute], dev) != 0:
            return  # the driver does not know it: no claim either way
        self.attribute_value = value.value
        self.claimed = (value.value & bit) != 0 if bit else value.value != 0

    def answer(self):
        if self.reason:
            return {"value": None, "reason": self.reason, "claimed": self.claimed, "attribute_value": self.attribute_value}
        works = self.call != "" and self.result == "CUDA_SUCCESS"
        if self.claimed is None:
            value = "works" if works else "unsupported"
        elif self.claimed:
            value = "works" if works else "claimed-but-fails"
        else:
            value = "works-unclaimed" if works else "unsupported"
        return {"value": value, "claimed": self.claimed, "attribute_value": self.attribute_value, "call": self.call, "result": self.result}


def words_are(buffer, count, value):
    return bytes(buffer) == struct.pack("<I", value) * count


def memset_and_read_back(a, ptr, nbytes, value):
    """Our fill (cuMemsetD32, not a kernel) and our read-back (cuMemcpyDtoH into a Python buffer)."""
    back = ctypes.create_string_buffer(nbytes)
    if (a.step("cuMemsetD32", cu.cuMemsetD32_v2, ptr, value, nbytes // 4) and a.step("cuCtxSynchronize", cu.cuCtxSynchronize)
            and a.step("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2, back, ptr, nbytes)):
        return a.check("read back", words_are(back.raw, nbytes // 4, value), "the bytes read back differ from the memset")
    return False


def cpu_reads(a, ptr, nbytes, value):
    return a.check("CPU read", words_are(ctypes.string_at(ptr, nbytes), nbytes // 4, value), "the CPU read other bytes than were set")


def foreign_here(a, handle_type):
    """cudaprobe's platform rule, here on Linux: a Win32 type is null unless its attribute claims it."""
    if handle_type in (HANDLE_WIN32, HANDLE_WIN32_KMT) and not a.claimed:
        a.reason = "a Win32 handle is for Windows, and the attribute does not claim it here"
        return True
    return False


class Group:
    """The features of one probe, in order. With sticky_rule (memory-pools and virtual-memory, as in
    cudaprobe), after an error that leaves the context unusable the rest are null."""

    def __init__(self, probe, sticky_rule=False):
        self.probe, self.lost, self.out, self.sticky_rule = probe, "", {}, sticky_rule

    def begin(self, feature):
        a = Attempt(feature)
        a.reason = self.lost
        return a

    def record(self, a):
        self.out[f"{self.probe}.{a.feature}"] = a.answer()
        if self.sticky_rule and not self.lost and a.result in STICKY:
            self.lost = f"not tried: {a.feature}'s {a.call} returned {a.result}, which leaves the CUDA context unusable"


# ---- host-register-flags ----------------------------------------------------------------------


def host_register(nbytes):
    group = Group("host-register-flags")
    flags = [("default", 0, "HOST_REGISTER_SUPPORTED"), ("portable", 1, "HOST_REGISTER_SUPPORTED"),
             ("mapped", 2, "CAN_MAP_HOST_MEMORY"), ("read_only", 8, "READ_ONLY_HOST_REGISTER_SUPPORTED"), ("io_memory", 4, None)]
    for feature, flag, attribute in flags:
        a = group.begin(feature)
        if attribute:
            a.claim_from(attribute)
        # Our own buffer: anonymous mmap (page-aligned), random bytes rather than a pattern.
        host = mmap.mmap(-1, nbytes)
        data = os.urandom(nbytes)
        host.write(data)
        address = ctypes.addressof(ctypes.c_char.from_buffer(host))
        if a.step("cuMemHostRegister", cu.cuMemHostRegister_v2, address, nbytes, flag):
            device = CUdeviceptr()
            back = ctypes.create_string_buffer(nbytes)
            if (a.step("cuMemAlloc", cu.cuMemAlloc_v2, ctypes.byref(device), nbytes)
                    and a.step("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2, device, address, nbytes)
                    and a.step("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2, back, device, nbytes)):
                a.check("read back", back.raw == data, "the bytes the GPU read differ")
            if flag & 2:
                mapped = CUdeviceptr()
                if (a.step("cuMemHostGetDevicePointer", cu.cuMemHostGetDevicePointer_v2, ctypes.byref(mapped), address, 0)
                        and a.step("cuMemsetD32(mapped)", cu.cuMemsetD32_v2, mapped, 0xC0FFEE, nbytes // 4)
                        and a.step("cuCtxSynchronize", cu.cuCtxSynchronize)):
                    a.check("GPU write", words_are(host[:], nbytes // 4, 0xC0FFEE), "the GPU's writes through the mapped pointer did not arrive")
            if device.value:
                cu.cuMemFree_v2(device)
            a.cleanup("cuMemHostUnregister", cu.cuMemHostUnregister, address)
        del address
        host.close()
        group.record(a)
    return group.out


# ---- memory-pools -----------------------------------------------------------------------------


def pool_props(alloc_type, handle_types, location_type, location_id):
    props = PoolProps()
    props.allocType, props.handleTypes = alloc_type, handle_types
    props.location.type, props.location.id = location_type, location_id
    return props


def close_exported(bytes64, handle_type):
    if handle_type == HANDLE_POSIX_FD:
        fd = struct.unpack_from("<i", bytes64)[0]
        if fd >= 0:
            os.close(fd)


def try_pool(a, props, nbytes, value, export_type=0, cpu_check=False):
    pool = ctypes.c_void_p()
    if not a.step("cuMemPoolCreate", cu.cuMemPoolCreate, ctypes.byref(pool), ctypes.byref(props)):
        return
    ptr = CUdeviceptr()
    if a.step("cuMemAllocFromPoolAsync", cu.cuMemAllocFromPoolAsync, ctypes.byref(ptr), nbytes, pool, None):
        if export_type:
            exported = ctypes.create_string_buffer(64)
            if a.step("cuMemPoolExportToShareableHandle", cu.cuMemPoolExportToShareableHandle, exported, pool, export_type, 0):
                close_exported(exported.raw, export_type)
        if memset_and_read_back(a, ptr, nbytes, value) and cpu_check:
            cpu_reads(a, ptr.value, nbytes, value)
        a.cleanup("cuMemFreeAsync", cu.cuMemFreeAsync, ptr, None)
        a.cleanup("cuCtxSynchronize", cu.cuCtxSynchronize)
    a.cleanup("cuMemPoolDestroy", cu.cuMemPoolDestroy, pool)


def host_pool(a, nbytes, value):
    """The host pool's memory is the CPU's: it is touched only after a copy into it worked."""
    pool = ctypes.c_void_p()
    if not a.step("cuMemPoolCreate", cu.cuMemPoolCreate, ctypes.byref(pool), ctypes.byref(pool_props(ALLOC_PINNED, 0, LOC_HOST, 0))):
        return
    ptr, device = CUdeviceptr(), CUdeviceptr()
    if (a.step("cuMemAllocFromPoolAsync", cu.cuMemAllocFromPoolAsync, ctypes.byref(ptr), nbytes, pool, None)
            and a.step("cuCtxSynchronize", cu.cuCtxSynchronize) and a.step("cuMemAlloc", cu.cuMemAlloc_v2, ctypes.byref(device), nbytes)
            and a.step("cuMemsetD32", cu.cuMemsetD32_v2, device, value, nbytes // 4)
            and a.step("cuMemcpyDtoH(host pool)", cu.cuMemcpyDtoH_v2, ptr.value, device, nbytes) and cpu_reads(a, ptr.value, nbytes, value)):
        data = os.urandom(nbytes)
        ctypes.memmove(ptr.value, data, nbytes)
        back = ctypes.create_string_buffer(nbytes)
        if (a.step("cuMemcpyHtoD(host pool)", cu.cuMemcpyHtoD_v2, device, ptr.value, nbytes)
                and a.step("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2, back, device, nbytes)):
            a.check("copy from the host pool", back.raw == data, "the bytes copied from the host pool differ")
    if device.value:
        cu.cuMemFree_v2(device)
    if ptr.value:
        a.cleanup("cuMemFreeAsync", cu.cuMemFreeAsync, ptr, None)
        a.cleanup("cuCtxSynchronize", cu.cuCtxSynchronize)
    a.cleanup("cuMemPoolDestroy", cu.cuMemPoolDestroy, pool)


def memory_pools(nbytes):
    group = Group("memory-pools", sticky_rule=True)
    value = 0x1234ABCD
    a = group.begin("device_pool")
    a.claim_from("MEMORY_POOLS_SUPPORTED")
    if not a.reason:
        pool, ptr = ctypes.c_void_p(), CUdeviceptr()
        if (a.step("cuDeviceGetDefaultMemPool", cu.cuDeviceGetDefaultMemPool, ctypes.byref(pool), dev)
                and a.step("cuMemAllocAsync", cu.cuMemAllocAsync, ctypes.byref(ptr), nbytes, None)):
            memset_and_read_back(a, ptr, nbytes, value)
        if ptr.value:
            a.cleanup("cuMemFreeAsync", cu.cuMemFreeAsync, ptr, None)
            a.cleanup("cuCtxSynchronize", cu.cuCtxSynchronize)
    group.record(a)

    a = group.begin("pool_create")
    a.claim_from("MEMORY_POOLS_SUPPORTED")
    if not a.reason:
        try_pool(a, pool_props(ALLOC_PINNED, 0, LOC_DEVICE, dev.value), nbytes, value)
    group.record(a)

    for feature, handle_type in (("pool_posix_fd", HANDLE_POSIX_FD), ("pool_win32", HANDLE_WIN32),
                                 ("pool_win32_kmt", HANDLE_WIN32_KMT), ("pool_fabric", HANDLE_FABRIC)):
        a = group.begin(feature)
        a.claim_from("MEMPOOL_SUPPORTED_HANDLE_TYPES", handle_type)
        if not a.reason and not foreign_here(a, handle_type):
            try_pool(a, pool_props(ALLOC_PINNED, handle_type, LOC_DEVICE, dev.value), nbytes, value, export_type=handle_type)
        group.record(a)

    a = group.begin("host_pool")
    a.claim_from("HOST_MEMORY_POOLS_SUPPORTED")
    if not a.reason:
        host_pool(a, nbytes, value)
    group.record(a)

    # Managed: 2 MiB, read by the CPU once the GPU is idle (no attribute claims it).
    a = group.begin("managed_pool")
    if not a.reason:
        try_pool(a, pool_props(ALLOC_MANAGED, 0, LOC_NONE, 0), 2 * MiB, value, cpu_check=True)
    group.record(a)
    return group.out


# ---- virtual-memory ---------------------------------------------------------------------------


def allocation_prop(location_type, location_id, handle_types=0):
    prop = AllocationProp()
    prop.type, prop.requestedHandleTypes = ALLOC_PINNED, handle_types
    prop.location.type, prop.location.id = location_type, location_id
    return prop


def access_desc(location_type, location_id):
    desc = AccessDesc()
    desc.location.type, desc.location.id, desc.flags = location_type, location_id, PROT_READWRITE
    return desc


def granular(a, prop, nbytes):
    granularity = c_size()
    if not a.step("cuMemGetAllocationGranularity", cu.cuMemGetAllocationGranularity, ctypes.byref(granularity), ctypes.byref(prop), 0):
        return 0
    if not a.check("cuMemGetAllocationGranularity", granularity.value > 0, "the granularity returned is 0"):
        return 0
    return (nbytes + granularity.value - 1) // granularity.value * granularity.value


class Mapped:
    """What one mapping holds; release() undoes what was made, in order."""

    def __init__(self):
        self.handle, self.ptr, self.mapped, self.size = ctypes.c_ulonglong(), CUdeviceptr(), False, 0

    def make(self, a, prop, size, wanted=0, suffix=""):
        self.size = size
        if not a.step("cuMemCreate", cu.cuMemCreate, ctypes.byref(self.handle), size, ctypes.byref(prop), 0):
            self.handle.value = 0
            return False
        if prop.requestedHandleTypes:
            exported = ctypes.create_string_buffer(64)
            if not a.step("cuMemExportToShareableHandle", cu.cuMemExportToShareableHandle, exported, self.handle, prop.requestedHandleTypes, 0):
                return False
            close_exported(exported.raw, prop.requestedHandleTypes)
        if not a.step("cuMemAddressReserve" + suffix, cu.cuMemAddressReserve, ctypes.byref(self.ptr), size, 0, wanted, 0):
            self.ptr.value = 0
            return False
        if wanted and not a.check("cuMemAddressReserve" + suffix, self.ptr.value == wanted, "the reservation was placed elsewhere than asked"):
            return False
        if not a.step("cuMemMap" + suffix, cu.cuMemMap, self.ptr, size, 0, self.handle, 0):
            return False
        self.mapped = True
        desc = access_desc(LOC_DEVICE, dev.value)
        return a.step("cuMemSetAccess" + suffix, cu.cuMemSetAccess, self.ptr, size, ctypes.byref(desc), 1)

    def release(self, a):
        if self.mapped:
            a.cleanup("cuMemUnmap", cu.cuMemUnmap, self.ptr, self.size)
        if self.handle.value:
            a.cleanup("cuMemRelease", cu.cuMemRelease, self.handle)
        if self.ptr.value:
            a.cleanup("cuMemAddressFree", cu.cuMemAddressFree, self.ptr, self.size)


VMM_CALLS = ("cuMemGetAllocationGranularity", "cuMemCreate", "cuMemRelease", "cuMemAddressReserve", "cuMemAddressFree", "cuMemMap",
             "cuMemUnmap", "cuMemSetAccess")


def vmm_entries(a, extra=()):
    return all(a.check(name, getattr(cu, name) is not None, MISSING) for name in VMM_CALLS + tuple(extra))


def try_mapping(a, prop, nbytes, value):
    host = prop.location.type == LOC_HOST
    if not vmm_entries(a, ("cuMemExportToShareableHandle",) if prop.requestedHandleTypes else ()):
        return
    size = granular(a, prop, nbytes)
    if not size:
        return
    m = Mapped()
    cpu = access_desc(LOC_HOST, 0)
    if (m.make(a, prop, size) and (not host or a.step("cuMemSetAccess(host)", cu.cuMemSetAccess, m.ptr, size, ctypes.byref(cpu), 1))
            and memset_and_read_back(a, m.ptr, size, value) and host):
        cpu_reads(a, m.ptr.value, size, value)
    m.release(a)


def virtual_memory(nbytes):
    group = Group("virtual-memory", sticky_rule=True)
    value = 0x0BADCAFE
    a = group.begin("vmm")
    a.claim_from("VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED")
    if not a.reason:
        try_mapping(a, allocation_prop(LOC_DEVICE, dev.value), nbytes, value)
    group.record(a)

    a = group.begin("vmm_grow")
    a.claim_from("VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED")
    prop = allocation_prop(LOC_DEVICE, dev.value)
    if not a.reason and vmm_entries(a):
        size = granular(a, prop, nbytes)
        if size:
            first, following = Mapped(), Mapped()
            if first.make(a, prop, size) and following.make(a, prop, size, first.ptr.value + size, "(next)"):
                memset_and_read_back(a, first.ptr, 2 * size, value)
            following.release(a)
            first.release(a)
    group.record(a)

    for feature, handle_type, attribute in (("vmm_posix_fd", HANDLE_POSIX_FD, "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED"),
                                            ("vmm_win32", HANDLE_WIN32, "HANDLE_TYPE_WIN32_HANDLE_SUPPORTED")):
        a = group.begin(feature)
        a.claim_from(attribute)
        if not a.reason and not foreign_here(a, handle_type):
            try_mapping(a, allocation_prop(LOC_DEVICE, dev.value, handle_type), nbytes, value)
        group.record(a)

    a = group.begin("host_vmm")
    a.claim_from("HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED")
    if not a.reason:
        try_mapping(a, allocation_prop(LOC_HOST, 0), nbytes, value)
    group.record(a)
    return group.out


# ---- ipc-handles ------------------------------------------------------------------------------


def ask_importer(a, request, pass_fds=(), timeout_s=60):
    """A second Python process imports the handle and answers with the SHA-256 of what it read."""
    try:
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "import", "--device", str(dev.value)],
                               input=json.dumps(request) + "\n", capture_output=True, text=True, pass_fds=pass_fds, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return a.check("the importing process", False, f"the importing process did not answer within {timeout_s} s")
    try:
        answer = json.loads(child.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return a.check("the importing process", False, f"the importing process exited {child.returncode}: {child.stderr.strip()[-300:]}")
    call = f"{answer.get('call', '?')} (importer)"
    if not a.check(call, answer.get("result") == "CUDA_SUCCESS", answer.get("result") or "no result"):
        return False
    a.call, a.result = call, "CUDA_SUCCESS"
    return a.check("read back (importer)", answer.get("sha256") == request["sha256"], "the importing process read other bytes than were written")


def ipc_shareable(a, handle_type, nbytes):
    prop = allocation_prop(LOC_DEVICE, dev.value, handle_type)
    if not vmm_entries(a, ("cuMemExportToShareableHandle",)):
        return
    size = granular(a, prop, nbytes)
    if not size:
        return
    m = Mapped()
    data = os.urandom(size)
    exported = ctypes.create_string_buffer(64)
    # make() exports once and closes it (as virtual-memory does); the handle handed over is a second export.
    if (m.make(a, prop, size) and a.step("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2, m.ptr, data, size)
            and a.step("cuMemExportToShareableHandle", cu.cuMemExportToShareableHandle, exported, m.handle, handle_type, 0)):
        request = {"handle_type": handle_type, "bytes": size, "sha256": hashlib.sha256(data).hexdigest()}
        if handle_type == HANDLE_POSIX_FD:
            fd = struct.unpack_from("<i", exported.raw)[0]
            request["handle"] = str(fd)
            try:
                ask_importer(a, request, pass_fds=(fd,))
            finally:
                os.close(fd)
        elif handle_type == HANDLE_FABRIC:
            request["handle"] = exported.raw.hex()
            ask_importer(a, request)
        else:  # a Win32 type claimed on Linux: its value, as a number
            request["handle"] = str(struct.unpack_from("<Q", exported.raw)[0])
            ask_importer(a, request)
    m.release(a)


def ipc_legacy(a, nbytes):
    ptr = CUdeviceptr()
    data = os.urandom(nbytes)
    handle = Handle64()
    if (a.step("cuMemAlloc", cu.cuMemAlloc_v2, ctypes.byref(ptr), nbytes) and a.step("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2, ptr, data, nbytes)
            and a.step("cuIpcGetMemHandle", cu.cuIpcGetMemHandle, ctypes.byref(handle), ptr)):
        ask_importer(a, {"handle_type": HANDLE_NONE, "bytes": nbytes, "sha256": hashlib.sha256(data).hexdigest(), "handle": bytes(handle.reserved).hex()})
    if ptr.value:
        cu.cuMemFree_v2(ptr)


def ipc_handles(nbytes):
    group = Group("ipc-handles")
    kinds = (("posix_fd", HANDLE_POSIX_FD, "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED"),
             ("win32", HANDLE_WIN32, "HANDLE_TYPE_WIN32_HANDLE_SUPPORTED"),
             ("win32_kmt", HANDLE_WIN32_KMT, "HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED"),
             ("fabric", HANDLE_FABRIC, "HANDLE_TYPE_FABRIC_SUPPORTED"), ("legacy_ipc", HANDLE_NONE, None))
    for feature, handle_type, attribute in kinds:
        a = Attempt(feature)
        if attribute:
            a.claim_from(attribute)
        if handle_type in (HANDLE_WIN32, HANDLE_WIN32_KMT) and not a.claimed:
            a.reason = "Win32 handles exist on Windows only and the attribute does not claim them here"
        elif handle_type == HANDLE_NONE:
            ipc_legacy(a, nbytes)
        else:
            ipc_shareable(a, handle_type, nbytes)
        group.record(a)
    return group.out


def importer(device):
    """`capability_peer.py import`: one request line in, one answer line out."""
    request = json.loads(sys.stdin.readline())
    a = Attempt("import")
    handle_type, nbytes = request["handle_type"], request["bytes"]
    primary = ctypes.c_void_p()
    device_handle = ctypes.c_int()
    if not (a.step("cuInit", cu.cuInit, 0) and a.step("cuDeviceGet", cu.cuDeviceGet, ctypes.byref(device_handle), device)
            and a.step("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain, ctypes.byref(primary), device_handle)
            and a.step("cuCtxSetCurrent", cu.cuCtxSetCurrent, primary)):
        emit({"call": a.call, "result": a.result})
    back = ctypes.create_string_buffer(nbytes)
    if handle_type == HANDLE_NONE:
        handle = Handle64()
        ctypes.memmove(handle.reserved, bytes.fromhex(request["handle"]), 64)
        ptr = CUdeviceptr()
        if a.step("cuIpcOpenMemHandle", cu.cuIpcOpenMemHandle_v2, ctypes.byref(ptr), handle, 1):
            a.step("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2, back, ptr, nbytes)
            a.cleanup("cuIpcCloseMemHandle", cu.cuIpcCloseMemHandle, ptr)
    else:
        if handle_type == HANDLE_FABRIC:
            fabric = Handle64()
            ctypes.memmove(fabric.reserved, bytes.fromhex(request["handle"]), 64)
            os_handle = ctypes.addressof(fabric)
        else:
            os_handle = int(request["handle"])
        imported = ctypes.c_ulonglong()
        ptr = CUdeviceptr()
        mapped = False
        desc = access_desc(LOC_DEVICE, device_handle.value)
        if (a.step("cuMemImportFromShareableHandle", cu.cuMemImportFromShareableHandle, ctypes.byref(imported), os_handle, handle_type)
                and a.step("cuMemAddressReserve", cu.cuMemAddressReserve, ctypes.byref(ptr), nbytes, 0, 0, 0)
                and a.step("cuMemMap", cu.cuMemMap, ptr, nbytes, 0, imported, 0)):
            mapped = True
            if a.step("cuMemSetAccess", cu.cuMemSetAccess, ptr, nbytes, ctypes.byref(desc), 1):
                a.step("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2, back, ptr, nbytes)
        if mapped:
            cu.cuMemUnmap(ptr, nbytes)
        if ptr.value:
            cu.cuMemAddressFree(ptr, nbytes)
        if imported.value:
            cu.cuMemRelease(imported)
    if a.failed():
        emit({"call": a.call, "result": a.result})
    emit({"call": a.call, "result": "CUDA_SUCCESS", "sha256": hashlib.sha256(back.raw).hexdigest()})


# ---- pinned-ceiling's failure_poisons ---------------------------------------------------------


def mem_available():
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def failure_poisons(chunk, max_bytes, fraction):
    """Pins cuMemHostAlloc chunks to the cap; after a failure, a sixteenth of a chunk with all still held."""
    available = mem_available()
    cap = min(max_bytes, fraction * available) if available else max_bytes
    cap = int(cap // chunk * chunk)
    held, failed, error = [], False, ""
    while (len(held) + 1) * chunk <= cap:
        host = ctypes.c_void_p()
        rc = cu.cuMemHostAlloc(ctypes.byref(host), chunk, 0)
        if rc != 0:
            failed, error = True, cu.error_name(rc)
            break
        held.append(host)
    answer = {"value": None, "pinned_bytes": len(held) * chunk, "cap_bytes": cap}
    if failed:
        retry = ctypes.c_void_p()
        rc = cu.cuMemHostAlloc(ctypes.byref(retry), max(chunk // 16, 65536), 0)
        answer.update({"value": rc != 0, "failure": error, "after_failure_result": cu.error_name(rc)})
        if rc == 0:
            held.append(retry)
    else:
        answer["reason"] = "no pin failed before the safety cap, so no pin followed a failure"
    for host in held:
        cu.cuMemFreeHost(host)
    return {"pinned-ceiling.failure_poisons": answer}


# ---- p2p's IOMMU and ACS facts (sysfs) ----------------------------------------------------------

PCI_NAME = "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$"


def pci_addresses():
    count = ctypes.c_int()
    cu.cuDeviceGetCount(ctypes.byref(count))
    addresses = []
    for i in range(count.value):
        device = ctypes.c_int()
        cu.cuDeviceGet(ctypes.byref(device), i)
        text = ctypes.create_string_buffer(64)
        if cu.cuDeviceGetPCIBusId is not None and cu.cuDeviceGetPCIBusId(text, 64, device) == 0:
            address = text.value.decode().lower()
        else:  # the attributes PCI_DOMAIN_ID (50), PCI_BUS_ID (33), PCI_DEVICE_ID (34)
            parts = []
            for attribute in (50, 33, 34):
                value = ctypes.c_int()
                cu.cuDeviceGetAttribute(ctypes.byref(value), attribute, device)
                parts.append(value.value)
            address = "%04x:%02x:%02x.0" % tuple(parts)
        addresses.append(address[-12:])  # "00000000:17:00.0" -> "0000:17:00.0"
    return addresses


def acs_control(config):
    """The ACS Control register (extended capability 0x000D, offset 6), or None."""
    if len(config) < 4096:
        return None
    offset, seen = 0x100, set()
    while 0x100 <= offset <= 4096 - 8 and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == 0x000D:
            return int.from_bytes(config[offset + 6:offset + 8], "little")
        offset = (header >> 20) & 0xFFC
    return None


def iommu_facts():
    import re
    modes, bridges, reasons = {}, {}, []
    unknown = []
    for address in pci_addresses():
        device = f"/sys/bus/pci/devices/{address}"
        if not os.path.exists(device):
            reasons.append(f"{device} is absent")
            unknown.append(f"{device} is absent")
            continue
        group = os.path.join(device, "iommu_group")
        if os.path.exists(group):
            try:
                with open(os.path.join(os.path.realpath(group), "type")) as type_file:
                    modes[address] = type_file.read().strip()
            except OSError as e:
                reasons.append(f"{address}: iommu_group/type: {e.strerror}")
        elif os.path.isdir("/sys/class/iommu") and os.listdir("/sys/class/iommu"):
            reasons.append(f"{address} has no IOMMU group although the kernel has an IOMMU")
        else:
            modes[address] = "off"
        path = os.path.dirname(os.path.realpath(device))
        while re.match(PCI_NAME, os.path.basename(path)):
            try:
                with open(os.path.join(path, "config"), "rb") as config_file:
                    config = config_file.read()
            except OSError:
                config = b""
            control = acs_control(config)
            if len(config) < 4096:
                bridges[os.path.basename(path)] = "the extended configuration space is not readable here (root only)"
                unknown.append(f"{os.path.basename(path)}: extended configuration space not readable")
            else:
                bridges[os.path.basename(path)] = "no ACS capability" if control is None else "0x%04x" % control
            if control is not None and control & 0x0C:
                bridges["redirect"] = True
            path = os.path.dirname(path)
    distinct = sorted(set(modes.values()))
    mode = None if not distinct else distinct[0] if len(distinct) == 1 else "mixed"
    redirect = bridges.pop("redirect", False)
    acs = True if redirect else None if unknown else False
    variables = {name: value for name, value in os.environ.items()
                 if name.upper().startswith(("CUDA_", "NCCL_")) and any(word in name.upper() for word in ("P2P", "PEER", "IOMMU", "ACS"))}
    return {
        "p2p.iommu_mode": {"value": mode, "devices": modes, **({"reason": "; ".join(reasons)} if mode is None else {})},
        "p2p.acs_redirect": {"value": acs, "bridges": bridges, **({"reason": "; ".join(unknown)} if acs is None else {})},
        "p2p.peer_override_variables": {"value": ",".join(variables) or "none", "variables": variables},
    }


def main():
    global cu, dev
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", default="all", choices=["all", "import"])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--size-mib", type=float, default=16)
    parser.add_argument("--pin-chunk-mib", type=float, default=256)
    parser.add_argument("--pin-max-gib", type=float, default=2)
    parser.add_argument("--pin-max-fraction", type=float, default=0.5)
    args = parser.parse_args()
    lib = load_driver()
    if lib is None:
        emit({"skipped": "no CUDA driver library (libcuda.so.1)"})
    cu = Driver(lib)
    if args.what == "import":
        importer(args.device)
    if cu.cuInit is None or cu.cuInit(0) != 0:
        emit({"skipped": "cuInit failed: no usable CUDA driver"})
    dev = ctypes.c_int()
    primary = ctypes.c_void_p()
    for name, fn, call_args in (("cuDeviceGet", cu.cuDeviceGet, (ctypes.byref(dev), args.device)),
                                ("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain, (ctypes.byref(primary), dev)),
                                ("cuCtxSetCurrent", cu.cuCtxSetCurrent, (primary,))):
        rc = fn(*call_args)
        if rc != 0:
            emit({"error": f"{name} failed: {cu.error_name(rc)}"}, 1)
    nbytes = int(args.size_mib * MiB) // 4 * 4
    features = {}
    features.update(host_register(nbytes))
    features.update(memory_pools(nbytes))
    features.update(virtual_memory(nbytes))
    features.update(ipc_handles(nbytes))
    features.update(failure_poisons(int(args.pin_chunk_mib * MiB), int(args.pin_max_gib * GiB), args.pin_max_fraction))
    emit({"features": features, "iommu": iommu_facts()})


cu = None
dev = None
if __name__ == "__main__":
    main()
