#include "json.hpp"

#include <cstdlib>

namespace cp {

namespace {

struct Reader {
  const std::string& s;
  size_t i = 0;
  bool ok = true;
  int depth = 0;

  void space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
  }
  bool literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(i, n, word) != 0) return false;
    i += n;
    return true;
  }
  std::string string() {
    std::string out;
    ++i;  // opening quote
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) {
        char e = s[++i];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u': {
            unsigned code = static_cast<unsigned>(std::strtoul(s.substr(i + 1, 4).c_str(), nullptr, 16));
            out += code < 0x80 ? static_cast<char>(code) : '?';
            i += 4;
            break;
          }
          default: out += e;
        }
        ++i;
      } else {
        out += s[i++];
      }
    }
    if (i >= s.size()) ok = false;
    ++i;  // closing quote
    return out;
  }
  Json value() {
    Json v;
    space();
    if (i >= s.size() || ++depth > 64) {
      ok = false;
      return v;
    }
    char c = s[i];
    if (c == '{') {
      v.kind = Json::Object;
      ++i;
      space();
      if (i < s.size() && s[i] == '}') {
        ++i;
      } else {
        while (ok) {
          space();
          if (i >= s.size() || s[i] != '"') {
            ok = false;
            break;
          }
          std::string key = string();
          space();
          if (i >= s.size() || s[i++] != ':') {
            ok = false;
            break;
          }
          v.fields[key] = value();
          space();
          if (i < s.size() && s[i] == ',') {
            ++i;
            continue;
          }
          if (i < s.size() && s[i] == '}') ++i;
          else ok = false;
          break;
        }
      }
    } else if (c == '[') {
      v.kind = Json::Array;
      ++i;
      space();
      if (i < s.size() && s[i] == ']') {
        ++i;
      } else {
        while (ok) {
          v.items.push_back(value());
          space();
          if (i < s.size() && s[i] == ',') {
            ++i;
            continue;
          }
          if (i < s.size() && s[i] == ']') ++i;
          else ok = false;
          break;
        }
      }
    } else if (c == '"') {
      v.kind = Json::String;
      v.text = string();
    } else if (literal("true")) {
      v.kind = Json::Bool;
      v.flag_ = true;
    } else if (literal("false")) {
      v.kind = Json::Bool;
    } else if (literal("null")) {
    } else {
      char* end = nullptr;
      v.number = std::strtod(s.c_str() + i, &end);
      if (end == s.c_str() + i) ok = false;
      else v.kind = Json::Number;
      i = static_cast<size_t>(end - s.c_str());
    }
    --depth;
    return v;
  }
};

const Json kNull;

}  // namespace

Json Json::parse(const std::string& text) {
  Reader r{text};
  Json v = r.value();
  return r.ok ? v : Json{};
}

const Json& Json::at(const std::string& k) const {
  auto it = fields.find(k);
  return it == fields.end() ? kNull : it->second;
}

double Json::num(const std::string& k, double fallback) const {
  const Json& v = at(k);
  return v.kind == Number ? v.number : fallback;
}

std::string Json::str(const std::string& k) const {
  const Json& v = at(k);
  return v.kind == String ? v.text : "";
}

bool Json::flag(const std::string& k) const {
  const Json& v = at(k);
  return v.kind == Bool && v.flag_;
}

}  // namespace cp
