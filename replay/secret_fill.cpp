// --set-secret: see replay/secret_fill.hpp.
#include "replay/secret_fill.hpp"

#include <cstdlib>
#include <stdexcept>

#include <boost/json.hpp>

#include "format/redaction.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {

namespace {

bool fill(boost::json::value& value, const SecretFills& fills) {
  bool changed = false;
  if (auto* object = value.if_object()) {
    for (auto& member : *object) {
      auto& inner = member.value();
      if (inner.is_string() && inner.get_string() == kRedacted) {
        for (const auto& [field, secret] : fills)
          if (member.key() == field) {
            inner = boost::json::string(secret);
            changed = true;
            break;
          }
        continue;
      }
      changed |= fill(inner, fills);
    }
  } else if (auto* array = value.if_array()) {
    for (auto& element : *array) changed |= fill(element, fills);
  }
  return changed;
}

}  // namespace

std::pair<std::string, std::string> read_secret_fill(std::string_view assignment) {
  auto [field, variable] = split_assignment(assignment, "--set-secret");
  const char* value = std::getenv(variable.c_str());
  if (!value || !*value)
    throw std::invalid_argument("--set-secret " + std::string(assignment) + ": the environment variable " +
                                variable + " is not set or empty (export it, or drop the flag)");
  return {field, value};
}

std::optional<std::string> fill_secrets(std::string_view body, const SecretFills& fills) {
  if (fills.empty() || body.find(kRedacted) == std::string_view::npos) return std::nullopt;
  boost::json::error_code error;
  auto parsed = boost::json::parse(body, error);
  if (error || !fill(parsed, fills)) return std::nullopt;
  return boost::json::serialize(parsed);
}

bool sends_redaction_marker(std::string_view target, std::string_view body) {
  return body.find(kRedacted) != std::string_view::npos || target.find(kRedacted) != std::string_view::npos ||
         target.find("%5Bredacted%5D") != std::string_view::npos;
}

std::string sent_redacted_note(std::size_t count) {
  return std::to_string(count) + " request(s) were sent with \"" + std::string(kRedacted) +
         "\" where the recording redacted a secret; pass --set-secret FIELD=ENV to send a real "
         "value from the environment (headers: --header or --api-key-env)";
}

}  // namespace retrace::replay
