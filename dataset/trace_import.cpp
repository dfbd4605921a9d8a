#include "dataset/trace_import.hpp"

#include <algorithm>
#include <cstdio>
#include <boost/json.hpp>
#include <unordered_set>

#include "base/ascii.hpp"
#include "base/described_json.hpp"
#include "base/time.hpp"
#include "dataset/import_settings.hpp"
#include "dataset/compressed_input.hpp"
#include "dataset/json_errors.hpp"
#include "format/header.hpp"
#include "dataset/staged_output.hpp"
#include "dataset/trace_rows.hpp"

namespace retrace {

namespace json = boost::json;

const std::vector<std::string_view>& trace_formats() {
  static const std::vector<std::string_view> formats = {"mooncake", "bailian", "azure", "burstgpt",
                                                        "sharegpt"};
  return formats;
}

bool is_trace_format(std::string_view name) {
  const auto& formats = trace_formats();
  return std::find(formats.begin(), formats.end(), name) != formats.end();
}

namespace {

constexpr std::string_view kAllFormats =
    "mooncake, bailian, azure, burstgpt, sharegpt, jsonl, openai-batch or export";

// From the top-level keys of the first object.
std::optional<std::string> format_of_keys(const std::vector<std::string>& keys) {
  auto has = [&](std::string_view key) { return std::find(keys.begin(), keys.end(), key) != keys.end(); };
  if (has("chat_id") || has("parent_chat_id")) return "bailian";
  if (has("hash_ids") || (has("timestamp") && has("input_length"))) return "mooncake";
  if (has("custom_id") && has("body")) return "openai-batch";
  if (has("header") || has("exchange")) return "export";
  if (has("prompt") || has("messages") || has("request")) return "jsonl";
  return std::nullopt;
}

// The top-level keys of the JSON object `text` opens, as far as `text` goes (it may be cut
// short: a row's first kilobytes name its keys, the text after them may be megabytes). Keys are
// taken as written (an escaped key is not decoded); nothing is validated: the import does that.
// `deepest` is how deep the text nests, so a row too deep to read is not blamed on its format.
struct TopLevel {
  std::vector<std::string> keys;
  int deepest = 0;
};
TopLevel object_keys(std::string_view text) {
  TopLevel top;
  auto& keys = top.keys;
  int depth = 0;
  bool expect_key = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      std::size_t end = i + 1;
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      if (depth == 1 && expect_key && end < text.size()) keys.emplace_back(text.substr(i + 1, end - i - 1));
      expect_key = false;
      i = end;
    } else if (c == '{' || c == '[') {
      expect_key = ++depth == 1 && c == '{';
      top.deepest = std::max(top.deepest, depth);
    } else if (c == '}' || c == ']') {
      if (--depth <= 0) break;
    } else if (c == ',') {
      expect_key = depth == 1;
    }
  }
  return top;
}

std::optional<std::string> format_of_header(std::string_view line) {
  std::string header = ascii_lower(line);
  header.erase(std::remove(header.begin(), header.end(), ' '), header.end());
  if (header.starts_with("timestamp,contexttokens,generatedtokens")) return "azure";
  if (header.find("requesttokens") != std::string::npos &&
      header.find("responsetokens") != std::string::npos)
    return "burstgpt";
  return std::nullopt;
}

// Builds the request of one row; reuses its buffers across rows.
class RequestBuilder {
 public:
  explicit RequestBuilder(const TraceImportOptions& options)
      : options_(options), prompts_(options.count_tokens) {}

  std::string body(const rows::TraceRow& row, std::uint64_t row_number, const std::string& where) {
    for (auto [count, what] : {std::pair{row.input_tokens, "prompt"}, std::pair{row.output_tokens, "output"}})
      if (count > kMaxImportTokens)
        throw TraceError(where + "the row claims " + std::to_string(count) + " " + what +
                         " tokens, past the " + std::to_string(kMaxImportTokens) +
                         " import accepts (the longest context of today's models); fix or drop the row");
    json::object body;
    std::int64_t max_tokens = std::max<std::int64_t>(row.output_tokens, 1);
    if (!row.messages.empty()) {
      if (options_.endpoint == "completions")
        throw TraceError(where + "ShareGPT conversations need the chat endpoint; drop --endpoint completions");
      json::array messages;
      for (const auto& message : row.messages)
        messages.push_back(json::object{{"role", message.role}, {"content", message.content}});
      body["messages"] = std::move(messages);
      max_tokens = !row.reply ? options_.max_tokens
                   : options_.count_tokens ? std::max<std::int64_t>(options_.count_tokens(*row.reply), 1)
                                           : approximate_tokens(*row.reply);
    } else {
      std::string_view prompt =
          prompts_.build(row.hash_ids, row.block_tokens, row.input_tokens, row_number);
      if (options_.endpoint == "completions")
        body["prompt"] = prompt;
      else
        body["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt}}};
    }
    body["max_tokens"] = max_tokens;
    body["ignore_eos"] = true;
    body["temperature"] = 0;
    return json::serialize(body);
  }

  std::uint64_t inexact_prompts() const { return prompts_.inexact_prompts(); }

 private:
  const TraceImportOptions& options_;
  PromptSynthesizer prompts_;
};

std::string seconds_text(std::int64_t ns) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1e9);
  return text;
}

// Each row's time as an offset from the first row's, the clock `--timing recorded` replays.
class RowClock {
 public:
  explicit RowClock(TraceImportSummary& summary) : summary_(summary) {}

  // Throws TraceError for a row before the first or more than kMaxScheduleSpan (base/time.hpp) after it.
  std::int64_t offset(std::int64_t time_ns, const std::string& where) {
    if (!first_) first_ = previous_ = time_ns;
    std::int64_t span = 0;
    // Times are within ±9e18 ns, so two of them may differ by more than int64 holds.
    bool overflow = __builtin_sub_overflow(time_ns, *first_, &span);
    if (!overflow && span < 0)
      throw TraceError(where + "the row's time is " + seconds_text(-span) +
                       " s before the first row's; import measures every time from the first "
                       "row: sort the rows by time first");
    if (overflow || span > kMaxScheduleSpan.count())
      throw TraceError(where + "the row's time is more than " + std::to_string(kMaxScheduleYears) +
                       " years after the first row's (" +
                       (overflow ? std::string("past 292 years") : seconds_text(span) + " s") +
                       "), which --timing recorded would wait out; check the timestamp and its unit");
    if (time_ns < previous_ && summary_.out_of_order++ == 0)
      summary_.first_out_of_order = where.ends_with(": ") ? where.substr(0, where.size() - 2) : where;
    previous_ = time_ns;
    return span;
  }

 private:
  TraceImportSummary& summary_;
  std::optional<std::int64_t> first_;
  std::int64_t previous_ = 0;
};

std::string settings_json(const TraceImportOptions& options) {
  TraceImportSettings settings;
  settings.from = options.from;
  settings.endpoint = options.endpoint;
  if (options.from == "sharegpt") {
    settings.prompts = "the conversations' own text";
    settings.max_turns = options.max_turns;
    settings.max_tokens = options.count_tokens ? "the recorded answer's tokens, counted by " + options.tokenizer_url
                                               : std::string("the recorded answer's words / 0.75 (approximate)");
  } else {
    settings.prompts = "synthetic, one block of text per hash id";
    settings.prompt_tokens = options.count_tokens ? "exact" : "approximate";
    settings.prompt_tokens_rule = options.count_tokens ? "counted by " + options.tokenizer_url
                                                       : std::string("one word per token");
    settings.max_tokens = "the recorded output length";
  }
  if (options.count_tokens) settings.tokenizer_url = options.tokenizer_url;
  if (options.from == "burstgpt") settings.skips = "rows with Response tokens 0 (failed in production)";
  return json::serialize(described_json::to_json(settings));
}

void read_rows(const TraceImportOptions& options, CompressedInput& input, const rows::RowSink& sink,
               TraceImportSummary& summary) {
  const std::string& from = options.from;
  if (from == "mooncake") return rows::read_mooncake(input, sink);
  if (from == "bailian") return rows::read_bailian(input, sink);
  if (from == "azure") return rows::read_azure(input, sink);
  if (from == "burstgpt") return rows::read_burstgpt(input, sink);
  return rows::read_sharegpt(input, sink, options.max_turns, summary.cut_conversations);
}

}  // namespace

std::string detect_import_format(const std::filesystem::path& path) {
  constexpr std::size_t kSniffBytes = 64 * 1024;
  CompressedInput input(path);
  // The first non-blank line's start: leading blank lines are dropped as they are read.
  std::string start;
  std::uint64_t line = 1;
  char chunk[8192];
  for (bool opening = true; start.size() < kSniffBytes; opening = false) {
    std::size_t n = input.read(chunk, std::min(sizeof chunk, kSniffBytes - start.size()));
    if (n == 0) break;
    start.append(chunk, n);
    if (opening && start.starts_with("\xEF\xBB\xBF")) start.erase(0, 3);  // a UTF-8 byte order mark
    std::size_t blank = start.find_first_not_of(" \t\r\n");
    if (blank == std::string::npos) blank = start.size();
    line += static_cast<std::uint64_t>(std::count(start.begin(), start.begin() + blank, '\n'));
    start.erase(0, blank);
  }
  std::string_view first(start);
  first = first.substr(0, first.find_first_of("\r\n"));
  std::optional<std::string> found;
  int deepest = 0;
  if (first.starts_with("[")) {
    found = "sharegpt";
  } else if (first.starts_with("{")) {
    auto top = object_keys(first);
    found = format_of_keys(top.keys);
    deepest = top.deepest;
  } else {
    found = format_of_header(first);
  }
  if (found) return *found;
  if (first.empty()) throw TraceError(path.string() + ": the file is empty");
  if (deepest > kMaxImportJsonDepth)
    throw TraceError(path.string() + ":" + std::to_string(line) + ": " +
                     json_error_text(json::error::too_deep));
  std::string shown(first.substr(0, 80));
  throw TraceError(path.string() + ":" + std::to_string(line) +
                   ": cannot tell the format from the first line (\"" + shown +
                   (first.size() > 80 ? "..." : "") + "\"); name it with --from " +
                   std::string(kAllFormats) + " (traces/README.md shows each)");
}

TraceImportSummary import_trace(const std::filesystem::path& in, const std::filesystem::path& out,
                                const TraceImportOptions& options) {
  if (!is_trace_format(options.from))
    throw TraceError("unknown trace format \"" + options.from + "\"; use " + std::string(kAllFormats));
  if (options.endpoint != "chat" && options.endpoint != "completions")
    throw TraceError("--endpoint " + options.endpoint +
                     " is for jsonl and openai-batch lines; a trace's synthetic prompts go to chat or completions");
  CompressedInput input(in);
  StagedOutput staged(in, out);

  TraceHeader header = new_trace_header(Source::imported, options.tool_version, in.string(),
                                        settings_json(options), *options.writer.clock);
  TraceImportSummary summary;
  {
    TraceWriter writer(staged.temporary(), header, options.writer);
    RequestBuilder builder(options);
    RowClock clock(summary);
    std::unordered_set<std::string> sessions;
    std::uint64_t row_number = 0;
    Exchange exchange;
    read_rows(options, input, [&](rows::TraceRow& row) {
      ++row_number;
      summary.lone_surrogates += row.lone_surrogates;
      if (!row.skip_reason.empty()) {
        ++summary.skipped;
        return;
      }
      exchange = Exchange{};
      exchange.id = summary.written + 1;
      if (row.time_ns) {
        exchange.intended_send_ns = exchange.actual_send_ns = clock.offset(*row.time_ns, rows::where(input));
        if (row.time_is_unix) exchange.start_unix_ns = *row.time_ns;
      }
      exchange.session_id = std::move(row.session_id);
      if (!exchange.session_id.empty()) sessions.insert(exchange.session_id);
      exchange.labels = std::move(row.labels);
      exchange.request.method = "POST";
      exchange.request.target = options.endpoint == "completions" ? "/v1/completions" : "/v1/chat/completions";
      exchange.request.headers = {HttpHeader{"content-type", "application/json"}};
      exchange.request.body = builder.body(row, row_number, rows::where(input));
      exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
      writer.write(exchange);
      ++summary.written;
    }, summary);
    if (summary.written == 0)
      throw TraceError(in.string() + ": no requests found" +
                       (summary.skipped ? " (every row was skipped as failed in production)" : ""));
    summary.sessions = sessions.size();
    summary.inexact_prompts = builder.inexact_prompts();
    writer.close();
  }
  staged.commit();
  return summary;
}

}  // namespace retrace
