// What stands between two GPUs' peer traffic and the IOMMU (C34): the IOMMU's mode for each
// GPU, and whether a PCIe bridge above it redirects peer requests upstream (ACS P2P Request or
// Completion Redirect), read from Linux sysfs; and the environment variables a user may have
// set to override the driver's peer-access gating. Windows exposes neither: null, with why.
#pragma once
#include <string>
#include <vector>

namespace cp {

// ACS Control of one bridge above a GPU, from its PCIe extended configuration space.
struct AcsBridge {
  std::string address;  // "0000:00:01.0"
  int control = -1;     // the ACS Control register; -1 when not read
  std::string why;      // why it was not read
};

// The ACS Control register in a configuration space (4096 bytes read from sysfs), -1 when the
// extended space is absent, unreadable (fewer than 4096 bytes: not root) or has no ACS capability.
int acsControl(const std::string& config);

// P2P Request Redirect (bit 2) or P2P Completion Redirect (bit 3): peer requests go up to the
// root complex (and its IOMMU) instead of across the switch.
bool acsRedirects(int control);

// Emits iommu_mode, acs_redirect and peer_override_variables for the GPUs at `busIds` (NVML's
// "00000000:17:00.0" form).
void emitIommuFacts(const std::string& probe, const std::vector<std::string>& busIds);

}  // namespace cp
