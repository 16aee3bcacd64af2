// The operating-system layer: everything that differs between Linux and Windows lives
// behind these functions, so that the probes themselves are written once.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cp {

// A shared library opened at run time; the probe has no link-time dependency on CUDA.
struct Library {
  void* handle = nullptr;
  std::string path;   // the name that opened it
  std::string error;  // why the last candidate failed, when none opened
  explicit operator bool() const { return handle != nullptr; }
  void* symbol(const char* name) const;
};
Library openFirst(const std::vector<std::string>& candidates);

bool isWindows();
std::string getEnv(const char* name);  // "" when unset
bool fileExists(const std::string& path);
bool readFile(const std::string& path, std::string& out);  // whole file, false when unreadable

struct OsInfo {
  std::string family;   // linux | windows
  std::string name;     // "Ubuntu 24.04.1 LTS", "Windows 10.0.22631"
  std::string kernel;   // uname -r on Linux; "10.0.22631" on Windows
  int64_t build = -1;   // Windows build number, -1 elsewhere
  std::string arch;     // x86_64, aarch64
  std::string wine;     // Wine version when running under Wine, else ""
};
OsInfo osInfo();

// Environment markers that do not need the driver.
struct WslInfo {
  bool isWsl = false;
  int version = 0;        // 1 or 2 when isWsl
  std::string evidence;   // which markers were seen
};
WslInfo wslInfo();

struct ContainerInfo {
  std::string kind;       // docker | podman | kubernetes | containerd | "" when not in a container
  std::string evidence;
  std::string nvidiaRuntime;  // evidence of the NVIDIA container runtime, "" when none seen
};
ContainerInfo containerInfo();

// A DWORD value of HKLM\SYSTEM\CurrentControlSet\Control\GraphicsDrivers (the scheduler and
// TDR settings), read only. `error` is the Win32 error when it is not found (2: the value does not
// exist); off Windows `found` is false with error -1.
struct RegistryDword {
  bool found = false;
  uint32_t value = 0;
  long error = 0;
};
extern const char* const kGraphicsDriversKey;  // "SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers"
RegistryDword graphicsDriversValue(const char* name);

// Hardware-accelerated GPU scheduling (Windows registry HwSchMode): 2 = on, 1 = off, -1 unknown.
int hwSchMode(std::string& reason);

// The names of the entries of a folder (files and folders, without "." and ".."); empty when it
// cannot be read.
std::vector<std::string> listDir(const std::string& dir);

#ifdef _WIN32
// Windows' wide (UTF-16) strings and cudaprobe's UTF-8 ones: every Win32 call that takes a name
// or path uses its W form, so that a profile such as C:\Users\Jürgen works whatever the ANSI
// code page.
std::string toUtf8(const std::wstring& w);
std::wstring fromUtf8(const std::string& s);
#endif

double nowSeconds();  // monotonic, high resolution
uint64_t processId();

}  // namespace cp
