// ShareGPT: one JSON array of {"id", "conversations": [{"from", "value"}...]} (see
// traces/README.md). The array is split into its elements by a small scanner and each element is
// parsed on its own, so a file of hundreds of megabytes never sits in memory as one document.
#include <boost/json.hpp>
#include <utility>

#include "base/text.hpp"
#include "dataset/json_errors.hpp"
#include "dataset/trace_rows.hpp"

namespace retrace::rows {

namespace json = boost::json;

namespace {

// "human" and "gpt" in ShareGPT; the other names appear in its derivatives.
std::optional<std::string> role_of(std::string_view from) {
  if (from == "human" || from == "user") return "user";
  if (from == "gpt" || from == "assistant" || from == "chatgpt" || from == "bard" ||
      from == "bing" || from == "model")
    return "assistant";
  if (from == "system") return "system";
  return std::nullopt;
}

// One conversation: a row per user message, carrying the turns before it and the answer after it.
void conversation_rows(const json::object& conversation, std::uint64_t ordinal,
                       std::uint64_t lone_surrogates, const std::string& where, const RowSink& sink,
                       std::size_t max_turns, std::uint64_t& cut) {
  auto bad = [&](const std::string& what) { throw TraceError(where + what); };
  std::string id = "conversation-" + std::to_string(ordinal);
  if (const auto* given = conversation.if_contains("id")) {
    if (given->is_string()) id = std::string(given->get_string());
    else if (given->is_number()) id = json::serialize(*given);
  }
  const auto* turns = conversation.if_contains("conversations");
  if (!turns || !turns->is_array())
    bad("expected \"conversations\": an array of {\"from\", \"value\"} objects");
  std::vector<Message> messages;
  for (const auto& turn : turns->get_array()) {
    const auto* object = turn.if_object();
    const json::value* from = object ? object->if_contains("from") : nullptr;
    const json::value* value = object ? object->if_contains("value") : nullptr;
    if (!from || !from->is_string() || !value || !value->is_string())
      bad("every entry of \"conversations\" must be {\"from\": \"human\"|\"gpt\", \"value\": \"...\"}");
    auto role = role_of(from->get_string());
    if (!role)
      bad("unknown speaker \"" + std::string(from->get_string()) +
          "\" in \"from\"; expected human, gpt or system");
    messages.push_back(Message{*role, std::string(value->get_string())});
  }
  TraceRow row;
  std::int64_t turn_number = 0;
  for (std::size_t k = 0; k < messages.size(); ++k) {
    if (messages[k].role != "user") continue;
    if (static_cast<std::size_t>(turn_number) == max_turns) {
      ++cut;
      break;
    }
    row = TraceRow{};
    row.session_id = id;
    row.messages.assign(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    if (k + 1 < messages.size() && messages[k + 1].role == "assistant") row.reply = messages[k + 1].content;
    row.labels.push_back(Label{"id", id});
    row.labels.push_back(Label{"turn", std::to_string(turn_number++)});
    row.lone_surrogates = std::exchange(lone_surrogates, 0);
    sink(row);
  }
}

}  // namespace

void read_sharegpt(CompressedInput& input, const RowSink& sink, std::size_t max_turns, std::uint64_t& cut) {
  const std::string file = input.path().string();
  std::uint64_t line = 1, element_line = 0, ordinal = 0;
  int depth = 0;
  bool in_string = false, escaped = false, opened = false, closed = false;
  std::string element;
  json::parser parser;
  char chunk[1 << 16];
  auto bad = [&](std::uint64_t at, const std::string& what) {
    throw TraceError(file + ":" + std::to_string(at) + ": " + what);
  };
  while (std::size_t n = input.read(chunk, sizeof chunk)) {
    for (std::size_t i = 0; i < n; ++i) {
      char c = chunk[i];
      if (c == '\n') ++line;
      if (depth >= 2) {
        // One conversation becomes requests, each at most what one trace record holds: a longer
        // one (a 10 GB string in a few MB of gzip) is refused before it is held, not bad_alloc.
        if (element.size() >= CompressedInput::kMaxLineBytes)
          bad(element_line, "conversation " + std::to_string(ordinal + 1) + " is longer than " +
                                std::to_string(CompressedInput::kMaxLineBytes >> 20) +
                                " MiB, more than one trace record holds; remove it or split it");
        element += c;
      }
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
        continue;
      }
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (closed) bad(line, "text after the closing ] of the conversation array");
      if (!opened) {
        if (c != '[') bad(line, "expected a JSON array of conversations ([{\"id\": ..., \"conversations\": [...]}, ...])");
        opened = true;
        depth = 1;
        continue;
      }
      if (depth == 1) {
        if (c == ']') { closed = true; depth = 0; continue; }
        if (c == ',') continue;
        if (c != '{') bad(line, "expected a conversation object ({\"id\": ..., \"conversations\": [...]})");
        element.assign(1, c);
        element_line = line;
        depth = 2;
        continue;
      }
      if (c == '"') in_string = true;
      else if (c == '{' || c == '[') ++depth;
      else if (c == '}' || c == ']') {
        if (--depth == 1) {
          std::string where = file + ":" + std::to_string(element_line) + ": conversation " +
                              std::to_string(ordinal + 1) + ": ";
          std::uint64_t lone_surrogates = replace_lone_surrogate_escapes(element);
          parser.reset();
          json::error_code error;
          parser.write(element, error);
          if (error) throw TraceError(where + json_error_text(error));
          json::value value = parser.release();
          conversation_rows(value.get_object(), ++ordinal, lone_surrogates, where, sink, max_turns, cut);
        }
      }
    }
  }
  if (!opened) bad(line, "the file is empty (expected a JSON array of conversations)");
  if (!closed) bad(line, "the conversation array ends early (no closing ])");
}

}  // namespace retrace::rows
