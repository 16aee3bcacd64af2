#include <cstdlib>
#include <sstream>

#include "probe.hpp"

namespace cp {

void Params::declare(const std::string& probe, const std::string& defaults) {
  probe_ = probe;
  std::stringstream ss(defaults);
  std::string item;
  while (std::getline(ss, item, ';')) {
    auto eq = item.find('=');
    if (eq != std::string::npos) defaults_[item.substr(0, eq)] = item.substr(eq + 1);
  }
}

void Params::set(const std::string& name, const std::string& value) {
  if (!defaults_.count(name)) {
    std::string known;
    for (const auto& kv : defaults_) known += (known.empty() ? "" : ", ") + kv.first;
    throw UsageError{"probe " + probe_ + " has no parameter " + name + (known.empty() ? " (it takes none)" : " (it takes " + known + ")")};
  }
  values_[name] = value;
}

std::string Params::get(const std::string& name) const {
  auto v = values_.find(name);
  if (v != values_.end()) return v->second;
  auto d = defaults_.find(name);
  if (d == defaults_.end()) throw UsageError{"internal: probe " + probe_ + " reads undeclared parameter " + name};
  return d->second;
}

static double parseNumber(const std::string& name, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0') {
    throw UsageError{"parameter " + name + "=" + text + " is not a number"};
  }
  return v;
}

double Params::number(const std::string& name) const { return parseNumber(name, get(name)); }

std::vector<double> Params::numbers(const std::string& name) const {
  std::vector<double> out;
  std::stringstream ss(get(name));
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parseNumber(name, item));
  if (out.empty()) throw UsageError{"parameter " + name + " needs at least one number"};
  return out;
}

}  // namespace cp
