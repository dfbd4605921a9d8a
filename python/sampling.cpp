#include "python/sampling.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include <boost/json/basic_parser_impl.hpp>

#include "python/columns.hpp"
#include "sweep/study.hpp"

namespace retrace::python {

namespace {

namespace json = boost::json;

enum Field { kTemperature, kTopP, kTopK, kSeed, kN, kFields, kSamplingParams = kFields, kParameters, kNone };
enum Scope { kTop, kSglang, kTgi, kScopes };  // in the audit's order of precedence

// One key's last value in one scope: absent (or null), a number, or something else.
struct Slot {
  enum Kind : std::uint8_t { absent, int64, uint64, real, other } kind = absent;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
};

struct Handler {
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  std::array<std::array<Slot, kFields>, kScopes> slots{};
  int depth = 0;
  Scope inner = kScopes;  // the scope of the object at depth 2, kScopes when none is tracked
  Scope pending_scope = kScopes;
  Field pending = kNone;  // the tracked key whose value comes next
  std::string key;        // a key given in parts

  void reset() {
    slots = {};
    depth = 0;
    inner = kScopes;
    pending = kNone;
    key.clear();
  }
  // The value that starts now belongs to the pending key, if any: its slot (nullptr when none).
  // A nested scope's key resets its slots (the last of duplicates wins, and only when an object).
  Slot* take(bool object) {
    Field field = std::exchange(pending, kNone);
    if (field == kNone) return nullptr;
    if (field == kSamplingParams || field == kParameters) {
      Scope scope = field == kSamplingParams ? kSglang : kTgi;
      slots[scope] = {};
      if (object) inner = scope;
      return nullptr;
    }
    return &slots[pending_scope][field];
  }
  void set(Slot::Kind kind) {
    if (Slot* slot = take(false)) *slot = Slot{kind};
  }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    if (Slot* slot = take(true)) *slot = Slot{Slot::other};
    ++depth;
    return true;
  }
  bool on_object_end(std::size_t, json::error_code&) {
    if (--depth == 1) inner = kScopes;
    return true;
  }
  bool on_array_begin(json::error_code&) {
    set(Slot::other);
    ++depth;
    return true;
  }
  bool on_array_end(std::size_t, json::error_code&) {
    if (--depth == 1) inner = kScopes;
    return true;
  }
  bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
    key.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view last, std::size_t, json::error_code&) {
    std::string_view name(last.data(), last.size());
    if (!key.empty()) name = key.append(last.data(), last.size());
    pending = kNone;
    if (depth == 1 || (depth == 2 && inner != kScopes)) {
      pending_scope = depth == 1 ? kTop : inner;
      if (name == "temperature") pending = kTemperature;
      else if (name == "top_p") pending = kTopP;
      else if (name == "top_k") pending = kTopK;
      else if (name == "seed") pending = kSeed;
      else if (name == "n") pending = kN;
      else if (depth == 1 && name == "sampling_params") pending = kSamplingParams;
      else if (depth == 1 && name == "parameters") pending = kParameters;
    }
    key.clear();
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) {
    set(Slot::other);
    return true;
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t value, json::string_view, json::error_code&) {
    if (Slot* slot = take(false)) *slot = Slot{Slot::int64, value};
    return true;
  }
  bool on_uint64(std::uint64_t value, json::string_view, json::error_code&) {
    if (Slot* slot = take(false)) *slot = Slot{Slot::uint64, 0, value};
    return true;
  }
  bool on_double(double value, json::string_view, json::error_code&) {
    if (Slot* slot = take(false)) *slot = Slot{Slot::real, 0, 0, value};
    return true;
  }
  bool on_bool(bool, json::error_code&) {
    set(Slot::other);
    return true;
  }
  bool on_null(json::error_code&) {
    set(Slot::absent);
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

// The audit's JSON text read back: a number (the double that text names).
double real_of(const Slot& slot) {
  switch (slot.kind) {
    case Slot::int64: return static_cast<double>(slot.i);
    case Slot::uint64: return static_cast<double>(slot.u);
    case Slot::real: return std::isfinite(slot.d) ? slot.d : kNaN;
    default: return kNaN;
  }
}
// ... and a whole number within int64 (a double prints in plain decimals: 42.0 is "42").
std::optional<std::int64_t> integer_of(const Slot& slot) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (slot.kind == Slot::int64) return slot.i;
  if (slot.kind == Slot::real && std::isfinite(slot.d) && std::trunc(slot.d) == slot.d && slot.d >= -kLimit &&
      slot.d < kLimit)
    return static_cast<std::int64_t>(slot.d);
  return std::nullopt;
}

double number_of(const std::optional<std::string>& text) {
  if (!text) return kNaN;
  double value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  return ec == std::errc() && end == text->data() + text->size() ? value : kNaN;
}
std::optional<std::int64_t> integer_of(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec == std::errc() && end == text->data() + text->size()) return value;
  return std::nullopt;
}

}  // namespace

SamplingAsSent audited_sampling(std::string_view body) {
  const sweep::ExchangeAudit audit = sweep::audit_body(body);
  return {number_of(audit.temperature), number_of(audit.top_p), integer_of(audit.top_k), integer_of(audit.seed),
          integer_of(audit.n)};
}

struct SamplingReader::Impl {
  json::basic_parser<Handler> parser{json::parse_options{}};
};

SamplingReader::SamplingReader() : impl_(std::make_unique<Impl>()) {}
SamplingReader::~SamplingReader() = default;

SamplingAsSent SamplingReader::read(std::string_view body) {
  SamplingAsSent out{kNaN, kNaN, std::nullopt, std::nullopt, std::nullopt};
  auto open = body.find('{');
  auto close = body.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return out;
  std::string_view text = body.substr(open, close - open + 1);
  auto& parser = impl_->parser;
  parser.reset();
  parser.handler().reset();
  json::error_code ec;
  std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (ec || used != text.size() || !parser.done()) return out;
  const auto& slots = parser.handler().slots;
  auto first = [&](Field field) -> const Slot& {  // the first scope that names it, not null
    for (const auto& scope : slots)
      if (scope[field].kind != Slot::absent) return scope[field];
    return slots[kTop][field];
  };
  out.temperature = real_of(first(kTemperature));
  out.top_p = real_of(first(kTopP));
  out.top_k = integer_of(first(kTopK));
  out.seed = integer_of(first(kSeed));
  out.n = integer_of(first(kN));
  return out;
}

}  // namespace retrace::python
