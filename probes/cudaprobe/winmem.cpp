#include "winmem.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "platform.hpp"

#ifdef _WIN32
#include <windows.h>
#include <dxgi1_4.h>
#include <pdh.h>
#include <pdhmsg.h>
#endif

namespace cp {

#ifdef _WIN32

namespace {

std::string hex(long v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08lX", static_cast<unsigned long>(v));
  return buf;
}

}  // namespace

bool readGpuCounter(const wchar_t* path, std::vector<CounterItem>& items, std::string& reason) {
  PDH_HQUERY q = nullptr;
  PDH_STATUS s = PdhOpenQueryW(nullptr, 0, &q);
  if (s != ERROR_SUCCESS) {
    reason = "PdhOpenQuery failed: " + hex(s);
    return false;
  }
  PDH_HCOUNTER c = nullptr;
  s = PdhAddEnglishCounterW(q, path, 0, &c);
  if (s == ERROR_SUCCESS) s = PdhCollectQueryData(q);
  if (s != ERROR_SUCCESS) {
    reason = "PDH counter " + toUtf8(path) + " not available (" + hex(s) +
             (s == static_cast<PDH_STATUS>(PDH_CSTATUS_NO_OBJECT) ? ": no such object; GPU counters need Windows 10 1709+ with a WDDM 2.x driver" : "") + ")";
    PdhCloseQuery(q);
    return false;
  }
  DWORD bytes = 0, count = 0;
  s = PdhGetFormattedCounterArrayW(c, PDH_FMT_LARGE, &bytes, &count, nullptr);
  if (s == ERROR_SUCCESS) {  // an empty instance list
    PdhCloseQuery(q);
    return true;
  }
  if (s != static_cast<PDH_STATUS>(PDH_MORE_DATA)) {
    reason = "PdhGetFormattedCounterArray failed: " + hex(s);
    PdhCloseQuery(q);
    return false;
  }
  std::vector<unsigned char> buf(bytes);
  auto* list = reinterpret_cast<PDH_FMT_COUNTERVALUE_ITEM_W*>(buf.data());
  s = PdhGetFormattedCounterArrayW(c, PDH_FMT_LARGE, &bytes, &count, list);
  PdhCloseQuery(q);
  if (s != ERROR_SUCCESS) {
    reason = "PdhGetFormattedCounterArray failed: " + hex(s);
    return false;
  }
  for (DWORD i = 0; i < count; ++i) items.push_back({toUtf8(list[i].szName), static_cast<double>(list[i].FmtValue.largeValue)});
  return true;
}

namespace {

Reading counterOn(const wchar_t* path, uint64_t pid, const DeviceAdapter& a) {
  Reading r;
  std::vector<CounterItem> items;
  if (!readGpuCounter(path, items, r.reason)) return r;
  return selectInstances(items, pid, a.known ? &a.luid : nullptr, a.reason);
}

LUID toLuid(const AdapterLuid& a) {
  LUID l;
  l.LowPart = a.low;
  l.HighPart = a.high;
  return l;
}

// DXCore, declared here (MinGW-w64 has no dxcore.h) and loaded at run time: dxcore.dll ships
// with Windows 10 2004 and later. The layouts follow Microsoft's dxcore_interface.h.
struct DXCoreMemoryBudget {
  uint64_t budget, currentUsage, availableForReservation, currentReservation;
};
struct DXCoreBudgetQuery {
  uint32_t nodeIndex;
  uint32_t segmentGroup;  // DXCoreSegmentGroup: 0 Local, 1 NonLocal
};
const uint32_t kDXCoreAdapterMemoryBudget = 1;  // DXCoreAdapterState::AdapterMemoryBudget
struct IDXCoreAdapterV : IUnknown {
  virtual bool STDMETHODCALLTYPE IsValid() = 0;
  virtual bool STDMETHODCALLTYPE IsAttributeSupported(REFGUID) = 0;
  virtual bool STDMETHODCALLTYPE IsPropertySupported(uint32_t) = 0;
  virtual HRESULT STDMETHODCALLTYPE GetProperty(uint32_t, size_t, void*) = 0;
  virtual HRESULT STDMETHODCALLTYPE GetPropertySize(uint32_t, size_t*) = 0;
  virtual bool STDMETHODCALLTYPE IsQueryStateSupported(uint32_t) = 0;
  virtual HRESULT STDMETHODCALLTYPE QueryState(uint32_t, size_t, const void*, size_t, void*) = 0;
};
struct IDXCoreAdapterFactoryV : IUnknown {
  virtual HRESULT STDMETHODCALLTYPE CreateAdapterList(uint32_t, const GUID*, REFIID, void**) = 0;
  virtual HRESULT STDMETHODCALLTYPE GetAdapterByLuid(const LUID&, REFIID, void**) = 0;
};
const GUID kIID_IDXCoreAdapterFactory = {0x78ee5945, 0xc36e, 0x4b13, {0xa6, 0x69, 0x00, 0x5d, 0xd1, 0x1c, 0x0f, 0x06}};
const GUID kIID_IDXCoreAdapter = {0xf0db4c7f, 0xfe5a, 0x42a2, {0xbd, 0x62, 0xf2, 0xa6, 0xcf, 0x6f, 0xc8, 0x3e}};

DxgiReadings dxcoreReadings(const AdapterLuid& luid, const std::string& dxgiWhy) {
  DxgiReadings d;
  auto fail = [&](const std::string& why) {
    d.local.reason = d.nonLocal.reason = dxgiWhy + "; DXCore: " + why;
    return d;
  };
  HMODULE dll = LoadLibraryW(L"dxcore.dll");
  if (!dll) return fail("dxcore.dll not available (LoadLibrary error " + std::to_string(GetLastError()) + "; it ships with Windows 10 2004 and later)");
  typedef HRESULT(WINAPI * CreateFactoryFn)(REFIID, void**);
  auto create = reinterpret_cast<CreateFactoryFn>(reinterpret_cast<void*>(GetProcAddress(dll, "DXCoreCreateAdapterFactory")));
  if (!create) return fail("dxcore.dll lacks DXCoreCreateAdapterFactory");
  IDXCoreAdapterFactoryV* factory = nullptr;
  HRESULT hr = create(kIID_IDXCoreAdapterFactory, reinterpret_cast<void**>(&factory));
  if (FAILED(hr) || !factory) return fail("DXCoreCreateAdapterFactory failed: " + hex(hr));
  IDXCoreAdapterV* adapter = nullptr;
  hr = factory->GetAdapterByLuid(toLuid(luid), kIID_IDXCoreAdapter, reinterpret_cast<void**>(&adapter));
  factory->Release();
  if (FAILED(hr) || !adapter) return fail("no adapter has the CUDA device's " + luidName(luid) + " (" + hex(hr) + ")");
  if (!adapter->IsQueryStateSupported(kDXCoreAdapterMemoryBudget)) {
    adapter->Release();
    return fail("the adapter does not report its memory budget");
  }
  Reading* out[2] = {&d.local, &d.nonLocal};
  for (uint32_t group = 0; group < 2; ++group) {
    DXCoreBudgetQuery in{0, group};
    DXCoreMemoryBudget budget{};
    hr = adapter->QueryState(kDXCoreAdapterMemoryBudget, sizeof in, &in, sizeof budget, &budget);
    if (SUCCEEDED(hr)) out[group]->value = static_cast<double>(budget.currentUsage);
    else out[group]->reason = "DXCore QueryState(AdapterMemoryBudget) failed: " + hex(hr);
  }
  adapter->Release();
  return d;
}

// D3DKMT, from gdi32.dll (the Windows Driver Kit's d3dkmthk.h, which MinGW-w64 lacks).
typedef UINT D3DKMT_HANDLE;
struct D3DKMT_OPENADAPTERFROMLUID_ {
  LUID AdapterLuid;
  D3DKMT_HANDLE hAdapter;
};
struct D3DKMT_QUERYADAPTERINFO_ {
  D3DKMT_HANDLE hAdapter;
  UINT Type;
  void* pPrivateDriverData;
  UINT PrivateDriverDataSize;
};
const UINT kKMTQAITYPE_WDDM_2_7_CAPS = 70;  // D3DKMT_WDDM_2_7_CAPS: bit 0 HwSchSupported, bit 1 HwSchEnabled

}  // namespace

DeviceAdapter deviceAdapter(CUdevice dev, bool haveDevice) {
  DeviceAdapter a;
  if (!haveDevice) {
    a.reason = "no CUDA device to match a GPU adapter with";
    return a;
  }
  Cuda& c = cuda();
  int tcc = 0;
  if (c.cuDeviceGetAttribute(&tcc, CU_ATTR_TCC_DRIVER, dev) == 0 && tcc == 1) {
    a.reason = "the device runs TCC: it is no WDDM adapter (Windows' GPU counters, DXGI and DXCore do not list it), and CUDA documents its LUID as undefined under TCC";
    return a;
  }
  if (!c.cuDeviceGetLuid) {
    a.reason = "the driver lacks cuDeviceGetLuid";
    return a;
  }
  char luid[8] = {0};
  unsigned mask = 0;
  CUresult rc = c.cuDeviceGetLuid(luid, &mask, dev);
  if (rc != 0) {
    a.reason = "cuDeviceGetLuid failed: " + c.err(rc) + " (CUDA documents the LUID as undefined under TCC)";
    return a;
  }
  a.luid = luidFromBytes(luid);
  a.known = true;
  return a;
}

PdhReadings pdhReadings(uint64_t pid, const DeviceAdapter& adapter) {
  PdhReadings p;
  if (pid) {
    p.processDedicated = counterOn(L"\\GPU Process Memory(*)\\Dedicated Usage", pid, adapter);
    p.processShared = counterOn(L"\\GPU Process Memory(*)\\Shared Usage", pid, adapter);
  } else {
    p.adapterDedicated = counterOn(L"\\GPU Adapter Memory(*)\\Dedicated Usage", 0, adapter);
    p.adapterShared = counterOn(L"\\GPU Adapter Memory(*)\\Shared Usage", 0, adapter);
  }
  return p;
}

DxgiReadings dxgiReadings(CUdevice dev, bool haveDevice) {
  DxgiReadings d;
  auto fail = [&](const std::string& why) {
    d.local.reason = d.nonLocal.reason = why;
    return d;
  };
  if (!haveDevice) return fail("no CUDA device to match a DXGI adapter with");
  DeviceAdapter a = deviceAdapter(dev, true);
  if (!a.known) return fail(a.reason);
  return adapterMemory(a.luid);
}

DxgiReadings adapterMemory(const AdapterLuid& luid) {
  DxgiReadings d;
  IDXGIFactory1* factory = nullptr;
  IDXGIAdapter1* adapter = nullptr;
  bool found = false;
  std::string dxgiWhy;
  HRESULT hr = CreateDXGIFactory1(__uuidof(IDXGIFactory1), reinterpret_cast<void**>(&factory));
  if (FAILED(hr)) {
    dxgiWhy = "CreateDXGIFactory1 failed: " + hex(hr);
  } else {
    for (UINT i = 0; factory->EnumAdapters1(i, &adapter) != DXGI_ERROR_NOT_FOUND; ++i) {
      DXGI_ADAPTER_DESC1 desc;
      adapter->GetDesc1(&desc);
      if (desc.AdapterLuid.LowPart == luid.low && desc.AdapterLuid.HighPart == luid.high) {
        found = true;
        break;
      }
      adapter->Release();
    }
    factory->Release();
    // DXGI lists display-capable adapters only: a compute-only (MCDM) one is found by DXCore.
    if (!found) dxgiWhy = "DXGI lists no adapter with the CUDA device's " + luidName(luid);
  }
  if (!found) return dxcoreReadings(luid, dxgiWhy);
  IDXGIAdapter3* a3 = nullptr;
  hr = adapter->QueryInterface(__uuidof(IDXGIAdapter3), reinterpret_cast<void**>(&a3));
  adapter->Release();
  if (FAILED(hr)) return dxcoreReadings(luid, "IDXGIAdapter3 not available (Windows 10+)");
  DXGI_QUERY_VIDEO_MEMORY_INFO info{};
  if (SUCCEEDED(a3->QueryVideoMemoryInfo(0, DXGI_MEMORY_SEGMENT_GROUP_LOCAL, &info))) d.local.value = static_cast<double>(info.CurrentUsage);
  else d.local.reason = "QueryVideoMemoryInfo(LOCAL) failed";
  if (SUCCEEDED(a3->QueryVideoMemoryInfo(0, DXGI_MEMORY_SEGMENT_GROUP_NON_LOCAL, &info))) d.nonLocal.value = static_cast<double>(info.CurrentUsage);
  else d.nonLocal.reason = "QueryVideoMemoryInfo(NON_LOCAL) failed";
  a3->Release();
  return d;
}

int hwSchedulerEnabled(const DeviceAdapter& adapter, std::string& reason) {
  if (!adapter.known) {
    reason = adapter.reason;
    return -1;
  }
  HMODULE gdi = LoadLibraryW(L"gdi32.dll");
  typedef LONG(WINAPI * OpenFn)(D3DKMT_OPENADAPTERFROMLUID_*);
  typedef LONG(WINAPI * QueryFn)(const D3DKMT_QUERYADAPTERINFO_*);
  typedef LONG(WINAPI * CloseFn)(const D3DKMT_HANDLE*);
  auto open = gdi ? reinterpret_cast<OpenFn>(reinterpret_cast<void*>(GetProcAddress(gdi, "D3DKMTOpenAdapterFromLuid"))) : nullptr;
  auto query = gdi ? reinterpret_cast<QueryFn>(reinterpret_cast<void*>(GetProcAddress(gdi, "D3DKMTQueryAdapterInfo"))) : nullptr;
  auto close = gdi ? reinterpret_cast<CloseFn>(reinterpret_cast<void*>(GetProcAddress(gdi, "D3DKMTCloseAdapter"))) : nullptr;
  if (!open || !query || !close) {
    reason = "gdi32.dll lacks D3DKMTOpenAdapterFromLuid/D3DKMTQueryAdapterInfo";
    return -1;
  }
  D3DKMT_OPENADAPTERFROMLUID_ o{toLuid(adapter.luid), 0};
  LONG st = open(&o);
  if (st != 0) {
    reason = "D3DKMTOpenAdapterFromLuid(" + luidName(adapter.luid) + ") failed: NTSTATUS " + hex(st);
    return -1;
  }
  UINT caps = 0;
  D3DKMT_QUERYADAPTERINFO_ q{o.hAdapter, kKMTQAITYPE_WDDM_2_7_CAPS, &caps, sizeof caps};
  st = query(&q);
  close(&o.hAdapter);
  if (st != 0) {
    reason = "D3DKMTQueryAdapterInfo(KMTQAITYPE_WDDM_2_7_CAPS) failed: NTSTATUS " + hex(st) + " (needs Windows 10 2004 and a WDDM 2.7 driver)";
    return -1;
  }
  if (!(caps & 1u)) {
    reason = "the adapter does not support hardware scheduling (HwSchSupported is 0)";
    return 0;
  }
  return (caps & 2u) ? 1 : 0;
}

#else

bool readGpuCounter(const wchar_t*, std::vector<CounterItem>&, std::string& reason) {
  reason = "PDH GPU counters exist on Windows only";
  return false;
}

DeviceAdapter deviceAdapter(CUdevice, bool) {
  DeviceAdapter a;
  a.reason = "GPU adapters by LUID exist on Windows only";
  return a;
}

PdhReadings pdhReadings(uint64_t, const DeviceAdapter&) {
  PdhReadings p;
  p.processDedicated.reason = p.processShared.reason = p.adapterDedicated.reason = p.adapterShared.reason =
      "PDH GPU counters exist on Windows only";
  return p;
}

DxgiReadings dxgiReadings(CUdevice, bool) {
  DxgiReadings d;
  d.local.reason = d.nonLocal.reason = "DXGI exists on Windows only";
  return d;
}

DxgiReadings adapterMemory(const AdapterLuid&) { return dxgiReadings(0, false); }

int hwSchedulerEnabled(const DeviceAdapter&, std::string& reason) {
  reason = "hardware-accelerated GPU scheduling is a Windows feature";
  return -1;
}

#endif

}  // namespace cp
