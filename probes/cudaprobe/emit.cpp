#include "emit.hpp"

#include <cmath>
#include <cstdio>

namespace cp {

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 9.0e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  }
  return buf;
}

Line::Line(const char* type, const std::string& probe) {
  buf_ = "{\"schema\":\"" + std::string(kSchema) + "\",\"type\":" + jsonString(type) +
         ",\"probe\":" + jsonString(probe);
}
void Line::key(const char* k) { buf_ += "," + jsonString(k) + ":"; }
Line& Line::str(const char* k, const std::string& v) { key(k); buf_ += jsonString(v); return *this; }
Line& Line::num(const char* k, double v) { key(k); buf_ += jsonNumber(v); return *this; }
Line& Line::integer(const char* k, int64_t v) { key(k); buf_ += std::to_string(v); return *this; }
Line& Line::boolean(const char* k, bool v) { key(k); buf_ += v ? "true" : "false"; return *this; }
Line& Line::null(const char* k) { key(k); buf_ += "null"; return *this; }
Line& Line::raw(const char* k, const std::string& j) { key(k); buf_ += j; return *this; }
std::string Line::emit() {
  if (!emitted_) {
    emitted_ = true;
    buf_ += "}";
    std::string out = buf_ + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
  return buf_;
}

void Obj::key(const char* k) {
  if (!buf_.empty()) buf_ += ",";
  buf_ += jsonString(k) + ":";
}
Obj& Obj::str(const char* k, const std::string& v) { key(k); buf_ += jsonString(v); return *this; }
Obj& Obj::num(const char* k, double v) { key(k); buf_ += jsonNumber(v); return *this; }
Obj& Obj::integer(const char* k, int64_t v) { key(k); buf_ += std::to_string(v); return *this; }
Obj& Obj::boolean(const char* k, bool v) { key(k); buf_ += v ? "true" : "false"; return *this; }
Obj& Obj::null(const char* k) { key(k); buf_ += "null"; return *this; }
Obj& Obj::raw(const char* k, const std::string& j) { key(k); buf_ += j; return *this; }

void emitSysinfo(const std::string& probe, const char* name, const std::string& value, const char* source) {
  Line("sysinfo", probe).str("name", name).str("value", value).str("source", source).emit();
}
void emitSysinfoNum(const std::string& probe, const char* name, double value, const char* source) {
  Line("sysinfo", probe).str("name", name).num("value", value).str("source", source).emit();
}
void emitSysinfoBool(const std::string& probe, const char* name, bool value, const char* source) {
  Line("sysinfo", probe).str("name", name).boolean("value", value).str("source", source).emit();
}
void emitSysinfoNull(const std::string& probe, const char* name, const std::string& reason) {
  Line("sysinfo", probe).str("name", name).null("value").str("reason", reason).emit();
}
std::string emitMetric(const std::string& probe, const char* name, double value, const char* unit, const Obj& attrs) {
  Line l("metric", probe);
  l.str("name", name).num("value", value).str("unit", unit);
  if (!attrs.empty()) l.raw("attrs", attrs.json());
  return l.emit();
}

std::string jsonRepeats(const std::vector<double>& repeats) {
  std::string out = "[";
  for (double v : repeats) {
    if (!std::isfinite(v)) continue;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    if (out.size() > 1) out += ",";
    out += buf;
  }
  return out + "]";
}

std::string emitMetric(const std::string& probe, const char* name, double value, const char* unit, const Obj& attrs,
                       const std::vector<double>& repeats) {
  Line l("metric", probe);
  l.str("name", name).num("value", value).str("unit", unit);
  if (!attrs.empty()) l.raw("attrs", attrs.json());
  l.raw("repeats", jsonRepeats(repeats));
  return l.emit();
}

std::string emitMetricNull(const std::string& probe, const char* name, const char* unit, const std::string& reason, const Obj& attrs) {
  Line l("metric", probe);
  l.str("name", name).null("value").str("unit", unit).str("reason", reason);
  if (!attrs.empty()) l.raw("attrs", attrs.json());
  return l.emit();
}

void emitFact(const std::string& probe, const char* name, const std::string& valueJson, const Obj& evidence, const std::string& reason) {
  Line l("fact", probe);
  l.str("name", name).raw("value", valueJson);
  if (!evidence.empty()) l.raw("evidence", evidence.json());
  if (!reason.empty()) l.str("reason", reason);
  l.emit();
}

void emitSkip(const std::string& probe, const std::string& reason, const char* what) {
  Line l("skip", probe);
  if (what) l.str("what", what);
  l.str("reason", reason).emit();
}
void emitError(const std::string& probe, const std::string& message, const char* code) {
  Line l("error", probe);
  if (code) l.str("code", code);
  l.str("message", message).emit();
}

}  // namespace cp
