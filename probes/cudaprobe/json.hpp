// A small JSON reader: subjects' answers ({"ok":true,"ms":1.5}) and, for `cudaprobe judge`,
// the probe's own JSON lines read back.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cp {

class Json {
 public:
  enum Kind { Null, Number, String, Bool, Array, Object };
  static Json parse(const std::string& text);  // invalid text yields null

  Kind kind = Null;
  double number = 0;
  std::string text;
  bool flag_ = false;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  bool isNull() const { return kind == Null; }
  bool has(const std::string& k) const { return fields.count(k) > 0; }
  const Json& at(const std::string& k) const;  // null when missing
  double num(const std::string& k, double fallback = -1) const;
  std::string str(const std::string& k) const;
  bool flag(const std::string& k) const;
};

}  // namespace cp
