// Mooncake and Qwen-Bailian rows: one JSON object per line (see traces/README.md).
#include <boost/json.hpp>
#include <cmath>
#include <unordered_map>

#include "base/text.hpp"
#include "dataset/json_errors.hpp"
#include "dataset/trace_rows.hpp"

namespace retrace::rows {

namespace json = boost::json;

namespace {

constexpr std::int64_t kMooncakeBlockTokens = 512;
constexpr std::int64_t kBailianBlockTokens = 16;

[[noreturn]] void bad(const CompressedInput& input, const std::string& what) {
  throw TraceError(where(input) + what);
}

std::int64_t whole_number(const CompressedInput& input, const json::object& row,
                          std::string_view name) {
  const json::value* value = row.if_contains(name);
  if (!value) bad(input, "missing \"" + std::string(name) + "\"");
  if (value->is_int64() && value->get_int64() >= 0) return value->get_int64();
  if (value->is_uint64() && value->get_uint64() <= INT64_MAX)
    return static_cast<std::int64_t>(value->get_uint64());
  if (value->is_double() && value->get_double() >= 0 && value->get_double() < 9e18 &&
      std::floor(value->get_double()) == value->get_double())
    return static_cast<std::int64_t>(value->get_double());
  bad(input, "\"" + std::string(name) + "\" must be a whole number of at least 0, not " +
                 json::serialize(*value));
}

// A time in the trace's unit as nanoseconds.
std::int64_t time_ns(const CompressedInput& input, const json::object& row, double unit_ns,
                     std::string_view unit) {
  const json::value* value = row.if_contains("timestamp");
  if (!value) bad(input, "missing \"timestamp\" (" + std::string(unit) + " from the trace's start)");
  if (!value->is_number())
    bad(input, "\"timestamp\" must be a number of " + std::string(unit) + ", not " +
                   json::serialize(*value));
  double at = value->to_number<double>() * unit_ns;
  if (!std::isfinite(at) || std::abs(at) > 9e18)
    bad(input, "\"timestamp\" " + json::serialize(*value) + " is out of range");
  return std::llround(at);
}

std::vector<std::uint64_t> hash_ids(const CompressedInput& input, const json::object& row) {
  std::vector<std::uint64_t> ids;
  const json::value* value = row.if_contains("hash_ids");
  if (!value || value->is_null()) return ids;
  if (!value->is_array()) bad(input, "\"hash_ids\" must be an array of whole numbers");
  ids.reserve(value->get_array().size());
  for (const auto& id : value->get_array()) {
    if (id.is_int64() && id.get_int64() >= 0) ids.push_back(static_cast<std::uint64_t>(id.get_int64()));
    else if (id.is_uint64()) ids.push_back(id.get_uint64());
    else bad(input, "\"hash_ids\" must hold whole numbers of at least 0, not " + json::serialize(id));
  }
  return ids;
}

// The fields Mooncake and Bailian rows share: time, lengths and prompt blocks.
void read_lengths(const CompressedInput& input, const json::object& object, double unit_ns,
                  std::string_view unit, std::int64_t block_tokens, TraceRow& row) {
  row = TraceRow{};
  row.time_ns = time_ns(input, object, unit_ns, unit);
  row.input_tokens = whole_number(input, object, "input_length");
  row.output_tokens = whole_number(input, object, "output_length");
  row.hash_ids = hash_ids(input, object);
  row.block_tokens = block_tokens;
}

// Calls `each` with every non-blank line parsed as a JSON object, and the number of lone
// surrogate escapes replaced in it.
template <typename Each>
void each_object(CompressedInput& input, Each&& each) {
  json::parser parser;
  std::string line;
  while (input.next_line(line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::uint64_t lone_surrogates = replace_lone_surrogate_escapes(line);
    parser.reset();
    json::error_code error;
    parser.write(line, error);
    if (error) bad(input, json_error_text(error));
    json::value value = parser.release();
    if (!value.is_object()) bad(input, "expected a JSON object");
    each(value.get_object(), lone_surrogates);
  }
}

}  // namespace

void read_mooncake(CompressedInput& input, const RowSink& sink) {
  TraceRow row;
  each_object(input, [&](const json::object& object, std::uint64_t lone_surrogates) {
    read_lengths(input, object, 1e6, "milliseconds", kMooncakeBlockTokens, row);
    row.lone_surrogates = lone_surrogates;
    sink(row);
  });
}

void read_bailian(CompressedInput& input, const RowSink& sink) {
  // Each chat's session is its root's: a turn names its parent, which came before it.
  std::unordered_map<std::int64_t, std::int64_t> root_of;
  TraceRow row;
  each_object(input, [&](const json::object& object, std::uint64_t lone_surrogates) {
    read_lengths(input, object, 1e9, "seconds", kBailianBlockTokens, row);
    row.lone_surrogates = lone_surrogates;
    std::int64_t chat = whole_number(input, object, "chat_id");
    std::int64_t root = chat;
    if (const auto* parent = object.if_contains("parent_chat_id");
        parent && parent->is_number() && parent->to_number<double>() >= 0) {
      std::int64_t parent_id = whole_number(input, object, "parent_chat_id");
      auto found = root_of.find(parent_id);
      root = found != root_of.end() ? found->second : parent_id;
    }
    root_of[chat] = root;
    row.session_id = "chat-" + std::to_string(root);
    row.labels.push_back(Label{"chat_id", std::to_string(chat)});
    if (const auto* turn = object.if_contains("turn"); turn && turn->is_number())
      row.labels.push_back(Label{"turn", json::serialize(*turn)});
    if (const auto* type = object.if_contains("type"); type && type->is_string())
      row.labels.push_back(Label{"type", std::string(type->get_string())});
    sink(row);
  });
}

std::string where(const CompressedInput& input) {
  return input.path().string() + ":" + std::to_string(input.line_number()) + ": ";
}

}  // namespace retrace::rows
