#include "platform.hpp"

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#ifdef _WIN32
#include <windows.h>
#else
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#endif

namespace cp {

bool isWindows() {
#ifdef _WIN32
  return true;
#else
  return false;
#endif
}

std::string getEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

double nowSeconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

Library openFirst(const std::vector<std::string>& candidates) {
  Library lib;
  for (const auto& name : candidates) {
#ifdef _WIN32
    HMODULE h = LoadLibraryW(fromUtf8(name).c_str());
    if (h) {
      lib.handle = reinterpret_cast<void*>(h);
      lib.path = name;
      return lib;
    }
    if (lib.error.empty()) lib.error = name + ": LoadLibrary error " + std::to_string(GetLastError());
#else
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      lib.handle = h;
      lib.path = name;
      return lib;
    }
    const char* e = dlerror();
    if (lib.error.empty()) lib.error = e ? e : (name + ": cannot open");  // the first candidate says most
#endif
  }
  return lib;
}

void* Library::symbol(const char* name) const {
  if (!handle) return nullptr;
#ifdef _WIN32
  return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(handle), name));
#else
  return dlsym(handle, name);
#endif
}

#ifdef _WIN32

std::string toUtf8(const std::wstring& w) {
  if (w.empty()) return "";
  int n = WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), nullptr, 0, nullptr, nullptr);
  std::string s(static_cast<size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), &s[0], n, nullptr, nullptr);
  return s;
}

std::wstring fromUtf8(const std::string& s) {
  if (s.empty()) return L"";
  int n = MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), nullptr, 0);
  std::wstring w(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), &w[0], n);
  return w;
}

bool fileExists(const std::string& path) {
  return GetFileAttributesW(fromUtf8(path).c_str()) != INVALID_FILE_ATTRIBUTES;
}

uint64_t processId() { return GetCurrentProcessId(); }

OsInfo osInfo() {
  OsInfo info;
  info.family = "windows";
  // GetVersionEx lies to unmanifested programs; RtlGetVersion reports the real build.
  typedef LONG(WINAPI * RtlGetVersionFn)(OSVERSIONINFOEXW*);
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  OSVERSIONINFOEXW v{};
  v.dwOSVersionInfoSize = sizeof v;
  auto rtlGetVersion = ntdll ? reinterpret_cast<RtlGetVersionFn>(
                                   reinterpret_cast<void*>(GetProcAddress(ntdll, "RtlGetVersion")))
                             : nullptr;
  if (rtlGetVersion && rtlGetVersion(&v) == 0) {
    info.kernel = std::to_string(v.dwMajorVersion) + "." + std::to_string(v.dwMinorVersion) + "." +
                  std::to_string(v.dwBuildNumber);
    info.build = v.dwBuildNumber;
    // Windows 11 kept the version number 10.0: its builds start at 22000.
    info.name = std::string(v.dwMajorVersion == 10 && v.dwBuildNumber >= 22000 ? "Windows 11 " : "Windows ") + info.kernel;
  } else {
    info.name = "Windows";
  }
  typedef const char*(CDECL * WineVersionFn)();
  auto wineVersion = ntdll ? reinterpret_cast<WineVersionFn>(
                                 reinterpret_cast<void*>(GetProcAddress(ntdll, "wine_get_version")))
                           : nullptr;
  if (wineVersion) info.wine = wineVersion();
  SYSTEM_INFO si;
  GetNativeSystemInfo(&si);
  switch (si.wProcessorArchitecture) {
    case PROCESSOR_ARCHITECTURE_AMD64: info.arch = "x86_64"; break;
    case PROCESSOR_ARCHITECTURE_ARM64: info.arch = "aarch64"; break;
    default: info.arch = "other";
  }
  return info;
}

WslInfo wslInfo() { return WslInfo{}; }
ContainerInfo containerInfo() { return ContainerInfo{}; }

const char* const kGraphicsDriversKey = "SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers";

RegistryDword graphicsDriversValue(const char* name) {
  RegistryDword r;
  DWORD value = 0, size = sizeof value;
  LONG rc = RegGetValueA(HKEY_LOCAL_MACHINE, kGraphicsDriversKey, name, RRF_RT_REG_DWORD, nullptr, &value, &size);
  r.found = rc == ERROR_SUCCESS;
  r.value = static_cast<uint32_t>(value);
  r.error = rc;
  return r;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  WIN32_FIND_DATAW d;
  HANDLE h = FindFirstFileW(fromUtf8(dir + "\\*").c_str(), &d);
  if (h == INVALID_HANDLE_VALUE) return names;
  do {
    std::string n = toUtf8(d.cFileName);
    if (n != "." && n != "..") names.push_back(n);
  } while (FindNextFileW(h, &d));
  FindClose(h);
  return names;
}

int hwSchMode(std::string& reason) {
  RegistryDword v = graphicsDriversValue("HwSchMode");
  LONG rc = v.error;
  DWORD value = v.value;
  if (rc == ERROR_FILE_NOT_FOUND) {
    reason = "registry value HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers\\HwSchMode is not set (the driver's default applies; hags_enabled says whether the scheduler runs)";
    return -1;
  }
  if (rc != ERROR_SUCCESS) {
    reason = "registry value HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers\\HwSchMode not readable (error " +
             std::to_string(rc) + ")";
    return -1;
  }
  return static_cast<int>(value);
}

#else

bool fileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

uint64_t processId() { return static_cast<uint64_t>(getpid()); }

static std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

static std::string osReleaseName() {
  std::string text;
  if (!readFile("/etc/os-release", text) && !readFile("/usr/lib/os-release", text)) return "Linux";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "Linux";
}

OsInfo osInfo() {
  OsInfo info;
  info.family = "linux";
  info.name = osReleaseName();
  struct utsname u;
  if (uname(&u) == 0) {
    info.kernel = u.release;
    info.arch = u.machine;
  }
  return info;
}

WslInfo wslInfo() {
  WslInfo w;
  std::string version;
  readFile("/proc/version", version);
  bool microsoftKernel = lower(version).find("microsoft") != std::string::npos;
  bool dxg = fileExists("/dev/dxg");
  bool wslLib = fileExists("/usr/lib/wsl/lib");
  if (!microsoftKernel && !dxg) return w;
  w.isWsl = true;
  // WSL1 has no Linux kernel of its own ("Microsoft" in the emulated /proc/version, no /dev/dxg);
  // WSL2's kernel is "*-microsoft-standard-WSL2" and exposes the GPU through /dev/dxg.
  w.version = (dxg || lower(version).find("wsl2") != std::string::npos) ? 2 : 1;
  std::string ev;
  if (microsoftKernel) ev += "/proc/version names microsoft";
  if (dxg) ev += std::string(ev.empty() ? "" : "; ") + "/dev/dxg present";
  if (wslLib) ev += std::string(ev.empty() ? "" : "; ") + "/usr/lib/wsl/lib present";
  w.evidence = ev;
  return w;
}

ContainerInfo containerInfo() {
  ContainerInfo c;
  std::string cgroup, mountinfo;
  readFile("/proc/1/cgroup", cgroup);
  readFile("/proc/self/mountinfo", mountinfo);
  if (fileExists("/.dockerenv")) {
    c.kind = "docker";
    c.evidence = "/.dockerenv present";
  } else if (fileExists("/run/.containerenv")) {
    c.kind = "podman";
    c.evidence = "/run/.containerenv present";
  } else if (cgroup.find("kubepods") != std::string::npos) {
    c.kind = "kubernetes";
    c.evidence = "/proc/1/cgroup names kubepods";
  } else if (cgroup.find("docker") != std::string::npos) {
    c.kind = "docker";
    c.evidence = "/proc/1/cgroup names docker";
  } else if (cgroup.find("containerd") != std::string::npos) {
    c.kind = "containerd";
    c.evidence = "/proc/1/cgroup names containerd";
  }
  if (c.kind.empty()) return c;
  // The NVIDIA container runtime bind-mounts the host's driver libraries into the container
  // and sets NVIDIA_VISIBLE_DEVICES; both are visible from inside.
  std::string ev;
  if (mountinfo.find("libcuda.so") != std::string::npos) ev = "libcuda.so bind-mounted from the host";
  if (mountinfo.find("libnvidia-ml.so") != std::string::npos)
    ev += std::string(ev.empty() ? "" : "; ") + "libnvidia-ml.so bind-mounted from the host";
  std::string visible = getEnv("NVIDIA_VISIBLE_DEVICES");
  if (!visible.empty() && !ev.empty()) ev += "; NVIDIA_VISIBLE_DEVICES=" + visible;
  c.nvidiaRuntime = ev;
  return c;
}

const char* const kGraphicsDriversKey = "SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers";

RegistryDword graphicsDriversValue(const char*) {
  RegistryDword r;
  r.error = -1;
  return r;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  return names;
}

int hwSchMode(std::string& reason) {
  reason = "hardware-accelerated GPU scheduling is a Windows setting";
  return -1;
}

#endif

}  // namespace cp
