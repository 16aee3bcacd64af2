#include "winmem.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#ifdef _WIN32
#include <windows.h>
#include <dxgi1_4.h>
#include <pdh.h>
#include <pdhmsg.h>
#include <vector>
#endif

namespace cp {

#ifdef _WIN32

namespace {

std::string hex(long v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08lX", static_cast<unsigned long>(v));
  return buf;
}

// Sums a wildcard counter's instances whose name starts with `prefix` ("" = all).
Reading sumCounter(const wchar_t* path, const std::wstring& prefix) {
  Reading r;
  PDH_HQUERY q = nullptr;
  PDH_STATUS s = PdhOpenQueryW(nullptr, 0, &q);
  if (s != ERROR_SUCCESS) {
    r.reason = "PdhOpenQuery failed: " + hex(s);
    return r;
  }
  PDH_HCOUNTER c = nullptr;
  s = PdhAddEnglishCounterW(q, path, 0, &c);
  if (s == ERROR_SUCCESS) s = PdhCollectQueryData(q);
  if (s != ERROR_SUCCESS) {
    std::wstring wp(path);
    r.reason = "PDH counter " + std::string(wp.begin(), wp.end()) + " not available (" + hex(s) +
               (s == static_cast<PDH_STATUS>(PDH_CSTATUS_NO_OBJECT) ? ": no such object; GPU counters need Windows 10 1709+ with a WDDM 2.x driver" : "") + ")";
    PdhCloseQuery(q);
    return r;
  }
  DWORD bytes = 0, count = 0;
  s = PdhGetFormattedCounterArrayW(c, PDH_FMT_LARGE, &bytes, &count, nullptr);
  if (s != static_cast<PDH_STATUS>(PDH_MORE_DATA)) {
    r.reason = s == ERROR_SUCCESS ? "no instances" : "PdhGetFormattedCounterArray failed: " + hex(s);
    if (s == ERROR_SUCCESS) r.value = 0;
    PdhCloseQuery(q);
    return r;
  }
  std::vector<unsigned char> buf(bytes);
  auto* items = reinterpret_cast<PDH_FMT_COUNTERVALUE_ITEM_W*>(buf.data());
  s = PdhGetFormattedCounterArrayW(c, PDH_FMT_LARGE, &bytes, &count, items);
  PdhCloseQuery(q);
  if (s != ERROR_SUCCESS) {
    r.reason = "PdhGetFormattedCounterArray failed: " + hex(s);
    return r;
  }
  double sum = 0;
  bool any = false;
  for (DWORD i = 0; i < count; ++i) {
    std::wstring name(items[i].szName);
    if (!prefix.empty() && name.compare(0, prefix.size(), prefix) != 0) continue;
    sum += static_cast<double>(items[i].FmtValue.largeValue);
    any = true;
  }
  if (!any) r.reason = "no counter instance for this process";
  else r.value = sum;
  return r;
}

}  // namespace

PdhReadings pdhReadings(uint64_t pid) {
  std::wstring prefix = L"pid_" + std::to_wstring(pid) + L"_";
  PdhReadings p;
  p.processDedicated = sumCounter(L"\\GPU Process Memory(*)\\Dedicated Usage", prefix);
  p.processShared = sumCounter(L"\\GPU Process Memory(*)\\Shared Usage", prefix);
  p.adapterDedicated = sumCounter(L"\\GPU Adapter Memory(*)\\Dedicated Usage", L"");
  p.adapterShared = sumCounter(L"\\GPU Adapter Memory(*)\\Shared Usage", L"");
  return p;
}

DxgiReadings dxgiReadings(CUdevice dev, bool haveDevice) {
  DxgiReadings d;
  auto fail = [&](const std::string& why) {
    d.local.reason = d.nonLocal.reason = why;
    return d;
  };
  if (!haveDevice) return fail("no CUDA device to match a DXGI adapter with");
  Cuda& c = cuda();
  if (!c.cuDeviceGetLuid) return fail("the driver lacks cuDeviceGetLuid");
  char luid[8] = {0};
  unsigned mask = 0;
  if (c.cuDeviceGetLuid(luid, &mask, dev) != 0) return fail("cuDeviceGetLuid failed (no LUID under TCC)");
  IDXGIFactory1* factory = nullptr;
  if (FAILED(CreateDXGIFactory1(__uuidof(IDXGIFactory1), reinterpret_cast<void**>(&factory)))) return fail("CreateDXGIFactory1 failed");
  IDXGIAdapter1* adapter = nullptr;
  bool found = false;
  for (UINT i = 0; factory->EnumAdapters1(i, &adapter) != DXGI_ERROR_NOT_FOUND; ++i) {
    DXGI_ADAPTER_DESC1 desc;
    adapter->GetDesc1(&desc);
    if (std::memcmp(&desc.AdapterLuid, luid, sizeof luid) == 0) {
      found = true;
      break;
    }
    adapter->Release();
  }
  factory->Release();
  if (!found) return fail("no DXGI adapter has the CUDA device's LUID");
  IDXGIAdapter3* a3 = nullptr;
  HRESULT hr = adapter->QueryInterface(__uuidof(IDXGIAdapter3), reinterpret_cast<void**>(&a3));
  adapter->Release();
  if (FAILED(hr)) return fail("IDXGIAdapter3 not available (Windows 10+)");
  DXGI_QUERY_VIDEO_MEMORY_INFO info{};
  if (SUCCEEDED(a3->QueryVideoMemoryInfo(0, DXGI_MEMORY_SEGMENT_GROUP_LOCAL, &info))) d.local.value = static_cast<double>(info.CurrentUsage);
  else d.local.reason = "QueryVideoMemoryInfo(LOCAL) failed";
  if (SUCCEEDED(a3->QueryVideoMemoryInfo(0, DXGI_MEMORY_SEGMENT_GROUP_NON_LOCAL, &info))) d.nonLocal.value = static_cast<double>(info.CurrentUsage);
  else d.nonLocal.reason = "QueryVideoMemoryInfo(NON_LOCAL) failed";
  a3->Release();
  return d;
}

#else

PdhReadings pdhReadings(uint64_t) {
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

#endif

}  // namespace cp
