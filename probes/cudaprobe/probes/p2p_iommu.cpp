#include "p2p_iommu.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "../emit.hpp"
#include "../platform.hpp"

#ifndef _WIN32
#include <climits>
#include <dirent.h>
#include <unistd.h>
extern char** environ;
#endif

namespace cp {

namespace {

constexpr int kAcsCapabilityId = 0x000D;

unsigned readU16(const std::string& bytes, size_t at) {
  return static_cast<unsigned char>(bytes[at]) | static_cast<unsigned char>(bytes[at + 1]) << 8;
}

unsigned readU32(const std::string& bytes, size_t at) { return readU16(bytes, at) | readU16(bytes, at + 2) << 16; }

#ifndef _WIN32
// "00000000:17:00.0" (NVML) -> "0000:17:00.0" (sysfs).
std::string sysfsAddress(const std::string& busId) {
  std::string id = busId;
  for (auto& ch : id) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  return id;
}

bool isPciAddress(const std::string& name) {
  return name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

std::string trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

std::string realPath(const std::string& path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) ? std::string(buffer) : std::string();
}

// The IOMMU's mode for one device: its group's domain type (identity: passthrough; DMA or
// DMA-FQ: translated), "off" when the kernel has no IOMMU group for it at all.
std::string iommuMode(const std::string& device, std::string& why) {
  std::string group = realPath(device + "/iommu_group");
  if (group.empty()) {
    DIR* dir = opendir("/sys/class/iommu");
    bool anyIommu = false;
    if (dir) {
      for (dirent* entry = readdir(dir); entry; entry = readdir(dir)) anyIommu = anyIommu || entry->d_name[0] != '.';
      closedir(dir);
    }
    if (anyIommu) why = "the device has no IOMMU group although the kernel has an IOMMU";
    return anyIommu ? "" : "off";
  }
  std::string type = trimmed(readAll(group + "/type"));
  if (type.empty()) why = group + "/type could not be read";
  return type;
}

// The bridges between the device and its root complex, nearest first.
std::vector<AcsBridge> bridgesAbove(const std::string& device) {
  std::vector<AcsBridge> out;
  std::string path = realPath(device);
  size_t end = path.rfind('/');
  while (end != std::string::npos && end > 0) {
    path = path.substr(0, end);
    std::string name = path.substr(path.rfind('/') + 1);
    if (!isPciAddress(name)) break;
    AcsBridge bridge;
    bridge.address = name;
    std::string config = readAll(path + "/config");
    if (config.size() < 4096) bridge.why = "the extended configuration space is readable by root only";
    else bridge.control = acsControl(config);
    if (config.size() >= 4096 && bridge.control < 0) bridge.why = "no ACS capability";
    out.push_back(bridge);
    end = path.rfind('/');
  }
  return out;
}
#endif

}  // namespace

int acsControl(const std::string& config) {
  if (config.size() < 4096) return -1;
  size_t at = 0x100;
  for (int hops = 0; hops < 64 && at >= 0x100 && at + 8 <= config.size(); ++hops) {
    unsigned header = readU32(config, at);
    if (header == 0 || header == 0xFFFFFFFF) return -1;
    if (static_cast<int>(header & 0xFFFF) == kAcsCapabilityId) return static_cast<int>(readU16(config, at + 6));
    at = (header >> 20) & 0xFFC;
  }
  return -1;
}

bool acsRedirects(int control) { return control >= 0 && (control & 0x0C) != 0; }

void emitIommuFacts(const std::string& probe, const std::vector<std::string>& busIds) {
  // The variables' names are not settled across CUDA releases: every CUDA_ or NCCL_ variable
  // that speaks of peers, P2P, the IOMMU or ACS is recorded, with its value.
  Obj variables;
  std::string names;
#ifdef _WIN32
  char** env = _environ;
#else
  char** env = environ;
#endif
  for (char** entry = env; entry && *entry; ++entry) {
    std::string pair = *entry;
    size_t eq = pair.find('=');
    std::string name = pair.substr(0, eq), upper = name;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    bool family = upper.rfind("CUDA_", 0) == 0 || upper.rfind("NCCL_", 0) == 0;
    bool peerish = upper.find("P2P") != std::string::npos || upper.find("PEER") != std::string::npos ||
                   upper.find("IOMMU") != std::string::npos || upper.find("ACS") != std::string::npos;
    if (!family || !peerish) continue;
    variables.str(name.c_str(), eq == std::string::npos ? "" : pair.substr(eq + 1));
    names += (names.empty() ? "" : ",") + name;
  }
  emitFact(probe, "peer_override_variables", jsonString(names.empty() ? "none" : names), variables);
#ifdef _WIN32
  (void)busIds;
  emitFact(probe, "iommu_mode", "null", Obj(), "read from Linux sysfs; Windows does not expose the IOMMU's mode for a device");
  emitFact(probe, "acs_redirect", "null", Obj(), "read from Linux sysfs; Windows does not expose PCIe ACS");
#else
  Obj modes, bridges;
  std::string mode, modeWhy;
  bool mixed = false, redirect = false, unknown = false;
  std::string unknownWhy;
  for (const std::string& busId : busIds) {
    std::string address = sysfsAddress(busId);
    std::string device = "/sys/bus/pci/devices/" + address;
    if (access(device.c_str(), F_OK) != 0) {
      modeWhy = device + " is absent (no PCI view of the GPU here: WSL 2 or a container without /sys)";
      unknown = true;
      unknownWhy = modeWhy;
      continue;
    }
    std::string why;
    std::string gpuMode = iommuMode(device, why);
    modes.str(address.c_str(), gpuMode.empty() ? "unknown: " + why : gpuMode);
    if (gpuMode.empty()) modeWhy = why;
    else if (mode.empty()) mode = gpuMode;
    else if (mode != gpuMode) mixed = true;
    for (const AcsBridge& bridge : bridgesAbove(device)) {
      char control[16];
      std::snprintf(control, sizeof control, "0x%04x", bridge.control);
      bridges.str(bridge.address.c_str(), bridge.control >= 0 ? control : bridge.why);
      if (acsRedirects(bridge.control)) redirect = true;
      if (bridge.control < 0 && bridge.why != "no ACS capability") {
        unknown = true;
        unknownWhy = bridge.address + ": " + bridge.why;
      }
    }
  }
  if (mixed) mode = "mixed";
  emitFact(probe, "iommu_mode", mode.empty() ? "null" : jsonString(mode), modes, mode.empty() ? modeWhy : "");
  // Redirect seen on one bridge decides; "none" needs every bridge read.
  if (redirect) emitFact(probe, "acs_redirect", "true", bridges);
  else if (unknown) emitFact(probe, "acs_redirect", "null", bridges, unknownWhy);
  else emitFact(probe, "acs_redirect", "false", bridges);
#endif
}

}  // namespace cp
