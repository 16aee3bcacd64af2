// The probe list: every probe of cudaprobe, in the catalogue's order. Its data (name, function,
// description, claims, platforms, default parameters) is probe_table.inc, generated from the
// TypeScript catalogue by `pnpm probe-table`; a probe's function is named for it in camelCase
// (pinned-vram: pinnedVram) and defined in probes/.
#include "probe.hpp"

namespace cp {

#define PROBE(name, function, description, claims, platforms, params) int function(ProbeContext& ctx);
#include "probe_table.inc"
#undef PROBE

const std::vector<ProbeInfo>& probes() {
  static const std::vector<ProbeInfo> all = {
#define PROBE(name, function, description, claims, platforms, params) {name, description, claims, platforms, params, function},
#include "probe_table.inc"
#undef PROBE
  };
  return all;
}

}  // namespace cp
