#include <cstdlib>
#include <sstream>

#include "probe.hpp"

namespace cp {

std::string Params::get(const std::string& name, const std::string& fallback) {
  used[name] = true;
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

static double parseNumber(const std::string& name, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0') {
    throw UsageError{"parameter " + name + "=" + text + " is not a number"};
  }
  return v;
}

double Params::number(const std::string& name, double fallback) {
  used[name] = true;
  auto it = values.find(name);
  return it == values.end() ? fallback : parseNumber(name, it->second);
}

std::vector<double> Params::numbers(const std::string& name, const std::vector<double>& fallback) {
  used[name] = true;
  auto it = values.find(name);
  if (it == values.end()) return fallback;
  std::vector<double> out;
  std::stringstream ss(it->second);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parseNumber(name, item));
  if (out.empty()) throw UsageError{"parameter " + name + " needs at least one number"};
  return out;
}

std::vector<std::string> Params::unused() const {
  std::vector<std::string> out;
  for (const auto& kv : values) {
    if (!used.count(kv.first)) out.push_back(kv.first);
  }
  return out;
}

}  // namespace cp
