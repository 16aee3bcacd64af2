// cudaprobe wait: the main process of a probe container (wait.hpp).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#ifdef _WIN32
#include <windows.h>
#else
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "probe.hpp"
#include "wait.hpp"

namespace cp {

namespace {

#ifndef _WIN32
// SIGUSR1 under --usr1-kills-others: every process of this PID namespace but its init and this
// one gets SIGKILL (the commands run in the container with docker exec, which the engine cannot
// signal itself); the container stays up for the next command.
extern "C" void killOthers(int) { kill(-1, SIGKILL); }

// Whether kill(-1) stays inside a container: this process is in a PID namespace other than the
// host's (whose /proc/self/ns/pid inode is the kernel's constant PROC_PID_INIT_INO) and is a
// child of that namespace's init.
bool inContainerPidNamespace() {
  struct stat st;
  return getppid() == 1 && stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != 0xEFFFFFFCu;
}
#endif

}  // namespace

// The main process of a probe container: it only has to stay alive while the container is used
// (docker-init, PID 1, reaps what the probes leave). With --stdin it ends, exit 0, when its
// stdin does: the container's stdin is the controller's attach connection (StdinOnce), so the
// container ends, and is removed (AutoRemove), when the controller or a hop to the engine dies.
// Plain, it blocks until a signal ends it. The line on stderr says it runs.
int runWait(int argc, char** argv) {
  bool untilEof = false;
  bool usr1KillsOthers = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--stdin") {
      untilEof = true;
    } else if (a == "--usr1-kills-others") {
      usr1KillsOthers = true;
    } else {
      throw UsageError{"unknown argument " + a};
    }
  }
#ifndef _WIN32
  if (usr1KillsOthers) {
    if (inContainerPidNamespace()) {
      struct sigaction sa;
      std::memset(&sa, 0, sizeof sa);
      sa.sa_handler = killOthers;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(SIGUSR1, &sa, nullptr);
    } else {
      // Left at its default (it ends this process): outside a container kill(-1) would reach
      // every process of the user.
      std::fputs("cudaprobe: not in a container's PID namespace under its init: SIGUSR1 only ends this process\n", stderr);
    }
  }
#else
  (void)usr1KillsOthers;  // no signals to send on Windows
#endif
  std::fputs("cudaprobe: waiting\n", stderr);
  std::fflush(stderr);
  if (!untilEof) {
    for (;;) {
#ifdef _WIN32
      Sleep(INFINITE);
#else
      pause();
#endif
    }
  }
  char buf[512];
#ifdef _WIN32
  while (std::fread(buf, 1, sizeof buf, stdin) > 0) {
  }
#else
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;  // end of input, or it is gone (EBADF, EIO)
  }
#endif
  return kExitRan;
}

}  // namespace cp
