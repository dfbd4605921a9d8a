// A replayed run's settings to and from its header's JSON: see metrics/run_settings.hpp.
#include "metrics/run_settings.hpp"

#include <boost/json.hpp>

#include "base/described_json.hpp"

namespace retrace::metrics {
namespace json = boost::json;

void tag_invoke(json::value_from_tag, json::value& out, const RunSettings& settings) {
  out = described_json::to_object(settings);
}

RunSettings tag_invoke(json::value_to_tag<RunSettings>, const json::value& in) {
  RunSettings settings;
  described_json::read_object(in.as_object(), settings);  // as_object throws when it is not one
  return settings;
}

std::string to_json(const RunSettings& settings) { return json::serialize(json::value_from(settings)); }

std::optional<RunSettings> parse_run_settings(std::string_view text) {
  json::error_code ec;
  json::value parsed = json::parse(text, ec);
  if (ec || !parsed.is_object()) return std::nullopt;
  return json::value_to<RunSettings>(parsed);
}

RunSettings run_settings_of(std::string_view text) { return parse_run_settings(text).value_or(RunSettings{}); }

}  // namespace retrace::metrics
