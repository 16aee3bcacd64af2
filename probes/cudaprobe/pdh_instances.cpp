#include "pdh_instances.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cp {

std::string luidName(const AdapterLuid& l) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "luid_0x%08X_0x%08X", static_cast<unsigned>(l.high), static_cast<unsigned>(l.low));
  return buf;
}

AdapterLuid luidFromBytes(const char bytes[8]) {
  AdapterLuid l;
  std::memcpy(&l.low, bytes, 4);
  std::memcpy(&l.high, bytes + 4, 4);
  return l;
}

namespace {

// Reads "0x" and exactly eight hex digits at `p`; advances it.
bool hex8(const char*& p, uint32_t& out) {
  if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X')) return false;
  char digits[9] = {0};
  for (int i = 0; i < 8; ++i) {
    char c = p[2 + i];
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    digits[i] = c;
  }
  out = static_cast<uint32_t>(std::strtoul(digits, nullptr, 16));
  p += 10;
  return true;
}

bool literal(const char*& p, const char* word) {
  size_t n = std::strlen(word);
  if (std::strncmp(p, word, n) != 0) return false;
  p += n;
  return true;
}

bool number(const char*& p, uint64_t& out) {
  if (!std::isdigit(static_cast<unsigned char>(*p))) return false;
  char* end = nullptr;
  out = std::strtoull(p, &end, 10);
  p = end;
  return true;
}

}  // namespace

GpuInstance parseGpuInstance(const std::string& name) {
  GpuInstance g;
  const char* p = name.c_str();
  if (literal(p, "pid_")) {
    if (!number(p, g.pid) || !literal(p, "_")) return g;
    g.hasPid = true;
  }
  uint32_t high = 0, low = 0;
  uint64_t phys = 0;
  if (!literal(p, "luid_") || !hex8(p, high) || !literal(p, "_") || !hex8(p, low) || !literal(p, "_phys_") || !number(p, phys)) return g;
  // GPU Engine instances go on ("_eng_0_engtype_3D"); the memory counters end here.
  if (*p != '\0') return g;
  g.luid.high = static_cast<int32_t>(high);
  g.luid.low = low;
  g.phys = static_cast<int>(phys);
  g.ok = true;
  return g;
}

Reading selectInstances(const std::vector<CounterItem>& items, uint64_t pid, const AdapterLuid* luid, const std::string& noLuidReason) {
  Reading r;
  if (!luid) {
    r.reason = noLuidReason;
    return r;
  }
  if (items.empty()) {
    r.reason = "the counter lists no instance at all (no WDDM GPU adapter is active)";
    return r;
  }
  double sum = 0;
  bool any = false;
  std::string elsewhere;
  for (const CounterItem& it : items) {
    GpuInstance g = parseGpuInstance(it.name);
    if (!g.ok || g.hasPid != (pid != 0) || (pid && g.pid != pid)) continue;
    if (g.luid.low != luid->low || g.luid.high != luid->high) {
      std::string other = luidName(g.luid);
      if (elsewhere.find(other) == std::string::npos) elsewhere += (elsewhere.empty() ? "" : ", ") + other;
      continue;
    }
    sum += it.value;
    any = true;
  }
  if (any) {
    r.value = sum;
  } else if (!elsewhere.empty()) {
    r.reason = std::string(pid ? "the subject's instances are" : "the instances are") + " on other adapters (" + elsewhere +
               "), none on the CUDA device's " + luidName(*luid);
  } else {
    r.reason = pid ? "no instance for the subject (pid " + std::to_string(pid) + ")" : "no adapter instance";
  }
  return r;
}

namespace {

// Lower case, without ".exe".
std::string imageName(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.size() > 4 && s.compare(s.size() - 4, 4, ".exe") == 0) s.resize(s.size() - 4);
  return s;
}

}  // namespace

std::vector<uint64_t> vmProcesses(const std::vector<ProcessEntry>& processes, const std::vector<std::string>& names) {
  std::vector<uint64_t> pids;
  for (const ProcessEntry& p : processes) {
    std::string n = imageName(p.name);
    for (const std::string& want : names) {
      if (n == imageName(want)) {
        pids.push_back(p.pid);
        break;
      }
    }
  }
  return pids;
}

Reading selectProcesses(const std::vector<CounterItem>& items, const std::vector<uint64_t>& pids) {
  Reading r;
  double sum = 0;
  bool any = false;
  for (const CounterItem& it : items) {
    GpuInstance g = parseGpuInstance(it.name);
    if (!g.ok || !g.hasPid) continue;
    for (uint64_t pid : pids) {
      if (g.pid == pid) {
        sum += it.value;
        any = true;
      }
    }
  }
  if (any) {
    r.value = sum;
  } else {
    std::string list;
    for (uint64_t pid : pids) list += (list.empty() ? "" : ", ") + std::to_string(pid);
    r.reason = "the counter has no instance of the VM process (pid " + list + "): it has no GPU allocation on any adapter, or this account may not read it";
  }
  return r;
}

}  // namespace cp
