// Azure LLM inference traces and BurstGPT: CSV files with a header row naming the columns, no
// quoting (see traces/README.md). Columns are found by name, so extra or reordered ones are fine.
#include <chrono>
#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/ascii.hpp"
#include "base/time.hpp"
#include "dataset/trace_rows.hpp"

namespace retrace::rows {

namespace {

[[noreturn]] void bad(const CompressedInput& input, const std::string& what) {
  throw TraceError(where(input) + what);
}

void split(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  for (;;) {
    std::size_t comma = line.find(',');
    fields.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return;
    line.remove_prefix(comma + 1);
  }
}

// The columns a reader needs, found by (case-insensitive) name in the header row.
class Columns {
 public:
  Columns(CompressedInput& input, std::string_view format) : input_(input) {
    std::string line;
    while (input.next_line(line) && trim(line).empty()) {
    }
    if (trim(line).empty()) bad(input, "the file is empty (expected a " + std::string(format) + " header row)");
    header_ = line;
    split(header_, names_);
    format_ = format;
  }

  std::size_t find(std::string_view name, bool required = true) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (ascii_lower(names_[i]) == ascii_lower(name)) return i;
    if (required)
      throw TraceError(input_.path().string() + ":1: the " + format_ + " header has no column \"" +
                       std::string(name) + "\" (it has: " + header_ + ")");
    return npos;
  }

  // The next data row split into `fields`; false at the end. Checks the column count.
  bool next(std::vector<std::string_view>& fields) {
    while (input_.next_line(line_)) {
      if (trim(line_).empty()) continue;
      split(line_, fields);
      if (fields.size() != names_.size())
        bad(input_, "expected " + std::to_string(names_.size()) + " comma-separated fields as the header has, found " +
                        std::to_string(fields.size()));
      return true;
    }
    return false;
  }

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  CompressedInput& input_;
  std::string header_;
  std::vector<std::string_view> names_;
  std::string format_;
  std::string line_;
};

std::int64_t count_field(const CompressedInput& input, std::string_view text, std::string_view name) {
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 0)
    bad(input, "\"" + std::string(name) + "\" must be a whole number of at least 0, not \"" +
                   std::string(text) + "\"");
  return value;
}

std::int64_t seconds_field(const CompressedInput& input, std::string_view text, std::string_view name) {
  double seconds = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc{} || end != text.data() + text.size() || !std::isfinite(seconds) ||
      std::abs(seconds) > 9e9)
    bad(input, "\"" + std::string(name) + "\" must be a number of seconds, not \"" +
                   std::string(text) + "\"");
  return std::llround(seconds * 1e9);
}

// Reads exactly `width` digits at `at`.
bool digits(std::string_view text, std::size_t& at, std::size_t width, unsigned& out) {
  if (at + width > text.size()) return false;
  out = 0;
  for (std::size_t i = 0; i < width; ++i) {
    char c = text[at + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<unsigned>(c - '0');
  }
  at += width;
  return true;
}

bool expect(std::string_view text, std::size_t& at, char c) {
  if (at >= text.size() || text[at] != c) return false;
  ++at;
  return true;
}

}  // namespace

std::optional<std::int64_t> parse_date_time_ns(std::string_view text) {
  std::size_t at = 0;
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, at, 4, year) || !expect(text, at, '-') || !digits(text, at, 2, month) ||
      !expect(text, at, '-') || !digits(text, at, 2, day))
    return std::nullopt;
  if (at >= text.size() || (text[at] != ' ' && text[at] != 'T')) return std::nullopt;
  ++at;
  if (!digits(text, at, 2, hour) || !expect(text, at, ':') || !digits(text, at, 2, minute) ||
      !expect(text, at, ':') || !digits(text, at, 2, second))
    return std::nullopt;
  auto days = days_from_civil(static_cast<int>(year), month, day);
  if (!days || year < 1970 || year > 2261 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  // The fraction: 1 to 9 digits, scaled to nanoseconds digit by digit (no floating point).
  std::int64_t fraction_ns = 0;
  if (at < text.size() && text[at] == '.') {
    ++at;
    std::int64_t scale = 100'000'000;
    std::size_t first = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      if (at - first == 9) return std::nullopt;
      fraction_ns += (text[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == first) return std::nullopt;
  }
  std::int64_t offset_s = 0;
  if (at < text.size() && text[at] == 'Z') {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    int sign = text[at] == '-' ? -1 : 1;
    ++at;
    unsigned offset_hours = 0, offset_minutes = 0;
    if (!digits(text, at, 2, offset_hours)) return std::nullopt;
    if (at < text.size() && text[at] == ':') ++at;
    if (!digits(text, at, 2, offset_minutes) || offset_hours > 23 || offset_minutes > 59)
      return std::nullopt;
    offset_s = sign * static_cast<std::int64_t>(offset_hours * 3600 + offset_minutes * 60);
  }
  if (at != text.size()) return std::nullopt;
  std::int64_t seconds = *days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  return seconds * 1'000'000'000 + fraction_ns;
}

void read_azure(CompressedInput& input, const RowSink& sink) {
  Columns columns(input, "Azure (TIMESTAMP,ContextTokens,GeneratedTokens)");
  std::size_t timestamp = columns.find("TIMESTAMP");
  std::size_t context = columns.find("ContextTokens");
  std::size_t generated = columns.find("GeneratedTokens");
  std::vector<std::string_view> fields;
  TraceRow row;
  while (columns.next(fields)) {
    row = TraceRow{};
    row.time_ns = parse_date_time_ns(fields[timestamp]);
    if (!row.time_ns)
      bad(input, "TIMESTAMP \"" + std::string(fields[timestamp]) +
                     "\" is not a date and time such as 2023-11-16 18:17:03.9799600");
    row.time_is_unix = true;
    row.input_tokens = count_field(input, fields[context], "ContextTokens");
    row.output_tokens = count_field(input, fields[generated], "GeneratedTokens");
    sink(row);
  }
}

void read_burstgpt(CompressedInput& input, const RowSink& sink) {
  Columns columns(input, "BurstGPT (Timestamp,Model,Request tokens,Response tokens,...)");
  std::size_t timestamp = columns.find("Timestamp");
  std::size_t request = columns.find("Request tokens");
  std::size_t response = columns.find("Response tokens");
  std::size_t model = columns.find("Model", false);
  std::size_t log_type = columns.find("Log Type", false);
  std::size_t session = columns.find("Session ID", false);
  std::vector<std::string_view> fields;
  TraceRow row;
  while (columns.next(fields)) {
    row = TraceRow{};
    row.time_ns = seconds_field(input, fields[timestamp], "Timestamp");
    row.input_tokens = count_field(input, fields[request], "Request tokens");
    row.output_tokens = count_field(input, fields[response], "Response tokens");
    // The production model is a label, never the body's "model": replay names the target's.
    if (model != Columns::npos) row.labels.push_back(Label{"trace_model", std::string(fields[model])});
    if (log_type != Columns::npos) row.labels.push_back(Label{"log_type", std::string(fields[log_type])});
    if (session != Columns::npos && !fields[session].empty())
      row.session_id = "session-" + std::string(fields[session]);
    if (row.output_tokens == 0) row.skip_reason = "failed in production (Response tokens 0)";
    sink(row);
  }
}

}  // namespace retrace::rows
