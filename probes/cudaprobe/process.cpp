#include "process.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "platform.hpp"

#ifdef _WIN32
#include <windows.h>
#include <psapi.h>
#else
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>
#endif

namespace cp {

namespace {
std::vector<uint64_t>& startedPids() {
  static std::vector<uint64_t> pids;
  return pids;
}
}  // namespace

const std::vector<uint64_t>& startedChildPids() { return startedPids(); }

void sleepSeconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

bool Child::readLine(std::string& line, double timeoutSec) {
  double deadline = nowSeconds() + timeoutSec;
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    double left = deadline - nowSeconds();
    if (left <= 0) return false;
    char chunk[4096];
#ifdef _WIN32
    DWORD avail = 0;
    if (!PeekNamedPipe(out_, nullptr, 0, nullptr, &avail, nullptr)) return false;  // closed
    if (avail == 0) {
      Sleep(1);
      continue;
    }
    DWORD got = 0;
    if (!ReadFile(out_, chunk, static_cast<DWORD>(std::min<size_t>(sizeof chunk, avail)), &got, nullptr) || got == 0) return false;
    buffer_.append(chunk, got);
#else
    pollfd p{out_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (r <= 0) continue;
    ssize_t got = read(out_, chunk, sizeof chunk);
    if (got <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(got));
#endif
  }
}

#ifdef _WIN32

static std::string quoteArg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\"") == std::string::npos) return a;
  std::string out = "\"";
  size_t backslashes = 0;
  for (char c : a) {
    if (c == '\\') {
      ++backslashes;
    } else if (c == '"') {
      out.append(backslashes * 2 + 1, '\\');
      out += '"';
      backslashes = 0;
    } else {
      out.append(backslashes, '\\');
      out += c;
      backslashes = 0;
    }
  }
  out.append(backslashes * 2, '\\');
  return out + "\"";
}

// The value of an environment variable, as UTF-8 ("" when unset).
static std::string envUtf8(const std::string& name) {
  std::wstring w = fromUtf8(name);
  DWORD n = GetEnvironmentVariableW(w.c_str(), nullptr, 0);
  if (n == 0) return "";
  std::wstring v(n, L'\0');
  n = GetEnvironmentVariableW(w.c_str(), &v[0], n);
  v.resize(n);
  return toUtf8(v);
}

bool Child::start(const std::string& exe, const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env, std::string& error) {
  SECURITY_ATTRIBUTES sa{sizeof sa, nullptr, TRUE};
  HANDLE childIn = nullptr, ourIn = nullptr, ourOut = nullptr, childOut = nullptr, childErr = nullptr;
  if (!CreatePipe(&childIn, &ourIn, &sa, 0) || !CreatePipe(&ourOut, &childOut, &sa, 0)) {
    error = "CreatePipe failed: error " + std::to_string(GetLastError());
    return false;
  }
  SetHandleInformation(ourIn, HANDLE_FLAG_INHERIT, 0);
  SetHandleInformation(ourOut, HANDLE_FLAG_INHERIT, 0);
  // The child gets its two pipe ends and an inheritable copy of our stderr, and nothing else of
  // ours (PROC_THREAD_ATTRIBUTE_HANDLE_LIST): every other inheritable handle stays here.
  HANDLE ourErr = GetStdHandle(STD_ERROR_HANDLE);
  if (ourErr && ourErr != INVALID_HANDLE_VALUE) DuplicateHandle(GetCurrentProcess(), ourErr, GetCurrentProcess(), &childErr, 0, TRUE, DUPLICATE_SAME_ACCESS);
  std::vector<HANDLE> inherit = {childIn, childOut};
  if (childErr) inherit.push_back(childErr);
  SIZE_T attrSize = 0;
  InitializeProcThreadAttributeList(nullptr, 1, 0, &attrSize);
  std::vector<unsigned char> attrBuf(attrSize);
  auto* attrs = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(attrBuf.data());
  bool haveList = InitializeProcThreadAttributeList(attrs, 1, 0, &attrSize) &&
                  UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit.data(), inherit.size() * sizeof(HANDLE), nullptr, nullptr);
  std::string cmd = quoteArg(exe);
  for (const auto& a : args) cmd += " " + quoteArg(a);
  std::wstring wcmd = fromUtf8(cmd);
  STARTUPINFOEXW si{};
  si.StartupInfo.cb = haveList ? sizeof si : sizeof si.StartupInfo;
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  si.StartupInfo.hStdInput = childIn;
  si.StartupInfo.hStdOutput = childOut;
  si.StartupInfo.hStdError = childErr;
  if (haveList) si.lpAttributeList = attrs;
  PROCESS_INFORMATION pi{};
  // The child inherits our environment; extra variables are set around CreateProcess
  // (cudaprobe is single-threaded) and restored after.
  std::vector<std::pair<std::string, std::string>> saved;
  for (const auto& kv : env) {
    saved.emplace_back(kv.first, envUtf8(kv.first));
    SetEnvironmentVariableW(fromUtf8(kv.first).c_str(), fromUtf8(kv.second).c_str());
  }
  DWORD flags = CREATE_NO_WINDOW | CREATE_UNICODE_ENVIRONMENT | (haveList ? EXTENDED_STARTUPINFO_PRESENT : 0);
  BOOL ok = CreateProcessW(nullptr, &wcmd[0], nullptr, nullptr, TRUE, flags, nullptr, nullptr, &si.StartupInfo, &pi);
  DWORD err = GetLastError();
  for (const auto& kv : saved) SetEnvironmentVariableW(fromUtf8(kv.first).c_str(), kv.second.empty() ? nullptr : fromUtf8(kv.second).c_str());
  if (haveList) DeleteProcThreadAttributeList(attrs);
  CloseHandle(childIn);
  CloseHandle(childOut);
  if (childErr) CloseHandle(childErr);
  if (!ok) {
    CloseHandle(ourIn);
    CloseHandle(ourOut);
    error = "CreateProcess(" + exe + ") failed: error " + std::to_string(err);
    return false;
  }
  CloseHandle(pi.hThread);
  process_ = pi.hProcess;
  pid_ = pi.dwProcessId;
  in_ = ourIn;
  out_ = ourOut;
  running_ = true;
  startedPids().push_back(pid_);
  return true;
}

bool Child::writeLine(const std::string& line) {
  if (!in_) return false;
  std::string l = line + "\n";
  DWORD wrote = 0;
  return WriteFile(in_, l.data(), static_cast<DWORD>(l.size()), &wrote, nullptr) && wrote == l.size();
}

void Child::closeStdin() {
  if (in_) CloseHandle(in_);
  in_ = nullptr;
}

int Child::wait(double timeoutSec) {
  if (!running_) return exitCode_;
  if (WaitForSingleObject(process_, static_cast<DWORD>(timeoutSec * 1000)) != WAIT_OBJECT_0) return -1;
  DWORD code = 0;
  GetExitCodeProcess(process_, &code);
  exitCode_ = static_cast<int>(code);
  running_ = false;
  return exitCode_;
}

void Child::kill() {
  if (running_) TerminateProcess(process_, 137);
  wait(10);
}

Child::~Child() {
  closeStdin();
  if (running_ && wait(10) < 0) kill();
  if (out_) CloseHandle(out_);
  if (process_) CloseHandle(process_);
}

static Reading processCounter(uint64_t pid, bool privateBytes) {
  Reading r;
  HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ, FALSE, static_cast<DWORD>(pid));
  if (!h) {
    r.reason = "OpenProcess(" + std::to_string(pid) + ") failed: error " + std::to_string(GetLastError());
    return r;
  }
  PROCESS_MEMORY_COUNTERS_EX c{};
  c.cb = sizeof c;
  if (GetProcessMemoryInfo(h, reinterpret_cast<PROCESS_MEMORY_COUNTERS*>(&c), sizeof c)) {
    r.value = static_cast<double>(privateBytes ? c.PrivateUsage : c.WorkingSetSize);
  } else {
    r.reason = "GetProcessMemoryInfo failed: error " + std::to_string(GetLastError());
  }
  CloseHandle(h);
  return r;
}

Reading processResident(uint64_t pid) { return processCounter(pid, false); }
Reading processPrivate(uint64_t pid) { return processCounter(pid, true); }

static Reading globalMemory(bool total) {
  MEMORYSTATUSEX m{};
  m.dwLength = sizeof m;
  Reading r;
  if (GlobalMemoryStatusEx(&m)) r.value = static_cast<double>(total ? m.ullTotalPhys : m.ullAvailPhys);
  else r.reason = "GlobalMemoryStatusEx failed";
  return r;
}
Reading systemAvailable() { return globalMemory(false); }
Reading systemTotal() { return globalMemory(true); }

#else

bool Child::start(const std::string& exe, const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env, std::string& error) {
  int toChild[2], fromChild[2];
  if (pipe(toChild) != 0 || pipe(fromChild) != 0) {
    error = std::string("pipe failed: ") + std::strerror(errno);
    return false;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork failed: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
#ifdef __linux__
    // The subject ends when this process does, however it ends (SIGKILL, a crash): busy in a
    // long allocation it would not see its stdin close, and would go on holding the GPU.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
#endif
    // The child execs at once: nothing initialised in the parent (NVML) is used here.
    dup2(toChild[0], 0);
    dup2(fromChild[1], 1);
    close(toChild[0]);
    close(toChild[1]);
    close(fromChild[0]);
    close(fromChild[1]);
    for (const auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  close(toChild[0]);
  close(fromChild[1]);
  in_ = toChild[1];
  out_ = fromChild[0];
  fcntl(in_, F_SETFD, FD_CLOEXEC);
  fcntl(out_, F_SETFD, FD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);  // a subject that died must not kill the sampler on write
  pid_ = static_cast<uint64_t>(pid);
  running_ = true;
  startedPids().push_back(pid_);
  return true;
}

bool Child::writeLine(const std::string& line) {
  if (in_ < 0) return false;
  std::string l = line + "\n";
  return write(in_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
}

void Child::closeStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

int Child::wait(double timeoutSec) {
  if (!running_) return exitCode_;
  double deadline = nowSeconds() + timeoutSec;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(static_cast<pid_t>(pid_), &status, WNOHANG);
    if (r == static_cast<pid_t>(pid_)) {
      exitCode_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      running_ = false;
      return exitCode_;
    }
    if (r < 0 || nowSeconds() > deadline) return -1;
    sleepSeconds(0.005);
  }
}

void Child::kill() {
  if (running_) ::kill(static_cast<pid_t>(pid_), SIGKILL);
  wait(10);
}

Child::~Child() {
  closeStdin();
  if (running_ && wait(10) < 0) kill();
  if (out_ >= 0) close(out_);
}

static Reading statusField(uint64_t pid, const char* field) {
  Reading r;
  std::string text;
  if (!readFile("/proc/" + std::to_string(pid) + "/status", text)) {
    r.reason = "/proc/" + std::to_string(pid) + "/status not readable (process gone)";
    return r;
  }
  auto at = text.find(std::string(field) + ":");
  if (at == std::string::npos) {
    r.reason = std::string(field) + " not in /proc/PID/status";
    return r;
  }
  r.value = std::strtod(text.c_str() + at + std::strlen(field) + 1, nullptr) * 1024.0;  // kB
  return r;
}

Reading processResident(uint64_t pid) { return statusField(pid, "VmRSS"); }
Reading processPrivate(uint64_t pid) { return statusField(pid, "RssAnon"); }

static Reading meminfoField(const char* field) {
  Reading r;
  std::string text;
  if (!readFile("/proc/meminfo", text)) {
    r.reason = "/proc/meminfo not readable";
    return r;
  }
  auto at = text.find(std::string(field) + ":");
  if (at == std::string::npos) {
    r.reason = std::string(field) + " not in /proc/meminfo";
    return r;
  }
  r.value = std::strtod(text.c_str() + at + std::strlen(field) + 1, nullptr) * 1024.0;
  return r;
}
Reading systemAvailable() { return meminfoField("MemAvailable"); }
Reading systemTotal() { return meminfoField("MemTotal"); }

#endif

}  // namespace cp
