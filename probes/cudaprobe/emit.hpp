// JSON-lines output of the cudaprobe/1 protocol. Every line is flushed as soon as it is
// written, so that a probe killed by a timeout still leaves everything it measured so far.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cp {

constexpr const char* kSchema = "cudaprobe/1";

std::string jsonString(const std::string& s);

// One protocol line: {"schema":"cudaprobe/1","type":...,"probe":...,<fields>}.
class Line {
 public:
  Line(const char* type, const std::string& probe);
  Line& str(const char* key, const std::string& value);
  Line& num(const char* key, double value);  // NaN and infinities are written as null
  Line& integer(const char* key, int64_t value);
  Line& boolean(const char* key, bool value);
  Line& null(const char* key);
  Line& raw(const char* key, const std::string& json);  // value already encoded as JSON
  // Writes the line; returns it (without the newline) for callers that keep what they emitted.
  std::string emit();

 private:
  void key(const char* k);
  std::string buf_;
  bool emitted_ = false;
};

// Small object builder for nested values (readings of a sample, attributes of a metric).
class Obj {
 public:
  Obj& str(const char* key, const std::string& value);
  Obj& num(const char* key, double value);
  Obj& integer(const char* key, int64_t value);
  Obj& boolean(const char* key, bool value);
  Obj& null(const char* key);
  Obj& raw(const char* key, const std::string& json);
  std::string json() const { return "{" + buf_ + "}"; }
  bool empty() const { return buf_.empty(); }

 private:
  void key(const char* k);
  std::string buf_;
};

std::string jsonNumber(double v);

// Convenience emitters used by every probe.
void emitSysinfo(const std::string& probe, const char* name, const std::string& value, const char* source);
void emitSysinfoNum(const std::string& probe, const char* name, double value, const char* source);
void emitSysinfoBool(const std::string& probe, const char* name, bool value, const char* source);
void emitSysinfoNull(const std::string& probe, const char* name, const std::string& reason);
// A metric with its unit and the attributes that tell its series apart ({"api":"driver",...}).
std::string emitMetric(const std::string& probe, const char* name, double value, const char* unit, const Obj& attrs = Obj());
// The same, with the per-repetition values behind a median or percentile ("repeats", in the
// metric's unit, %.6g): the measured noise that `value` alone hides. Non-finite ones are left out.
std::string emitMetric(const std::string& probe, const char* name, double value, const char* unit, const Obj& attrs,
                       const std::vector<double>& repeats);
std::string jsonRepeats(const std::vector<double>& repeats);
std::string emitMetricNull(const std::string& probe, const char* name, const char* unit, const std::string& reason, const Obj& attrs = Obj());
// A fact: `valueJson` is already JSON (true, false, "on-exit", null); evidence are the raw numbers behind it.
void emitFact(const std::string& probe, const char* name, const std::string& valueJson, const Obj& evidence = Obj(), const std::string& reason = "");
void emitSkip(const std::string& probe, const std::string& reason, const char* what = nullptr);
void emitError(const std::string& probe, const std::string& message, const char* code = nullptr);

}  // namespace cp
