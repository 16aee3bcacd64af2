// The memory probes' facts, decided from what was recorded: the samples the sampler emitted
// and the metrics the probe reported. The probes call these at the end of a run; `cudaprobe
// judge PROBE` calls them on a saved record, so that a classification can be checked (and
// unit-tested) on real readings.
#pragma once
#include <string>
#include <vector>

#include "json.hpp"
#include "sampler.hpp"

namespace cp {

struct Recorded {
  std::vector<Sample> samples;
  std::vector<Json> metrics;  // metric records, as emitted
};

// "true" / "false" / "partial" for a growth of `g` bytes after allocating `n`.
std::string vramClass(double g, double n);

// Which source a pinned allocation was charged to, and by how much it grew.
struct Charge {
  std::string source;  // a device source, subject_rss_bytes or system_available_bytes; "" when none grew
  double grewBytes = 0;
  bool inverse = false;  // system_available_bytes falls when memory is used
};
Charge chargeOf(const Snapshot& base, const Snapshot& touched, double bytes);
// What is still held at `now`, against the baseline, on the charged source; once that source is
// gone (the subject exited) on the system- or device-wide source that stands in for it, named in
// `usedSource`.
Delta retained(const Charge& c, const Snapshot& base, const Snapshot& now, std::string* usedSource = nullptr);
bool isReleased(const Charge& c, const Snapshot& base, const Snapshot& now);

void judgePinnedVram(const std::string& probe, const Recorded& r);
void judgePinnedRelease(const std::string& probe, const Recorded& r);
void judgeMultiProcessPinned(const std::string& probe, const Recorded& r);
void judgePinnedCeiling(const std::string& probe, const Recorded& r);

// `cudaprobe judge PROBE`: reads the probe's JSON lines on stdin and prints the facts again.
int runJudge(const std::string& probe);

}  // namespace cp
