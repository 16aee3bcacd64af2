// cudaprobe wait [--stdin] [--usr1-kills-others]: the main process of a probe container.
#pragma once

namespace cp {

// Blocks until stopped, or with --stdin until stdin ends; exits 0. Throws UsageError for an
// argument it does not take.
int runWait(int argc, char** argv);

}  // namespace cp
