// Child processes with pipes (the memory probes' subjects), and memory readings of a process
// and of the system, for Linux and Windows.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cp {

class Child {
 public:
  Child() = default;
  ~Child();  // closes the pipes (the subject then exits on its own) and reaps it
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Starts `exe args...` with its stdin and stdout connected to us. `env` entries are added
  // to the child's environment. On failure returns false with `error` set.
  bool start(const std::string& exe, const std::vector<std::string>& args,
             const std::vector<std::pair<std::string, std::string>>& env, std::string& error);
  bool writeLine(const std::string& line);
  // One line from the child's stdout, without the newline; false on EOF or timeout.
  bool readLine(std::string& line, double timeoutSec);
  void closeStdin();
  // Waits for exit; returns the exit code, or -1 when it is still running after the timeout.
  int wait(double timeoutSec);
  void kill();
  bool running() const { return running_; }
  uint64_t pid() const { return pid_; }

 private:
  uint64_t pid_ = 0;
  bool running_ = false;
  int exitCode_ = -1;
  std::string buffer_;
#ifdef _WIN32
  void* process_ = nullptr;
  void* in_ = nullptr;   // our end of the child's stdin
  void* out_ = nullptr;  // our end of the child's stdout
#else
  int in_ = -1;
  int out_ = -1;
#endif
};

struct Reading {
  double value = -1;   // bytes; negative when unavailable
  std::string reason;  // why it is unavailable
  bool ok() const { return value >= 0; }
};

// Resident set (Linux VmRSS, Windows working set) and private bytes (Linux RssAnon,
// Windows PrivateUsage) of a process.
Reading processResident(uint64_t pid);
Reading processPrivate(uint64_t pid);
Reading systemAvailable();  // Linux MemAvailable, Windows ullAvailPhys
Reading systemTotal();

void sleepSeconds(double s);

// The pids of every child this process started (Child::start), for telling them from other
// users of the GPU (neighbours.hpp).
const std::vector<uint64_t>& startedChildPids();

}  // namespace cp
