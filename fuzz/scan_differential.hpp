// The differential check fuzz_fast_scan runs on each input, shared with the unit test that feeds
// it the shape corpus, generated and mutated events (tests/llm_fast_scan_test.cpp): the scanner of
// llm/fast_scan.hpp against Boost.JSON's basic_parser on the same bytes, event by event (when the
// scanner reads a document to its end, the parser must accept it with the very same events and
// values, doubles bit for bit), and the fast path's parser with the scanner in front against the
// parser alone (the same choices, logprobs, token ids and usage, or the same give-up).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "llm/fast_event.hpp"
#include "llm/fast_scan.hpp"

namespace retrace::fuzzing {

namespace json = boost::json;

// A SAX handler that writes down every event it is given, string parts joined.
class RecordingHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  std::string log;
  std::size_t events = 0;

  bool on_document_begin(json::error_code&) { return add("D"); }
  bool on_document_end(json::error_code&) { return add("d"); }
  bool on_object_begin(json::error_code&) { return add("{"); }
  bool on_object_end(std::size_t, json::error_code&) { return add("}"); }
  bool on_array_begin(json::error_code&) { return add("["); }
  bool on_array_end(std::size_t, json::error_code&) { return add("]"); }
  bool on_key_part(json::string_view part, std::size_t, json::error_code&) { return part_.append(part), true; }
  bool on_key(json::string_view part, std::size_t, json::error_code&) { return text("K", part); }
  bool on_string_part(json::string_view part, std::size_t, json::error_code&) { return part_.append(part), true; }
  bool on_string(json::string_view part, std::size_t, json::error_code&) { return text("S", part); }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t value, json::string_view, json::error_code&) { return add("I" + std::to_string(value)); }
  bool on_uint64(std::uint64_t value, json::string_view, json::error_code&) { return add("U" + std::to_string(value)); }
  bool on_double(double value, json::string_view, json::error_code&) {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return add("F" + std::to_string(bits));
  }
  bool on_bool(bool value, json::error_code&) { return add(value ? "T" : "N"); }
  bool on_null(json::error_code&) { return add("0"); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  bool add(const std::string& event) {
    log += event;
    log += '\n';
    ++events;
    return true;
  }
  bool text(const char* kind, json::string_view part) {
    part_.append(part);
    log += kind + std::to_string(part_.size()) + ':';
    log += part_;
    part_.clear();
    return add("");
  }
  std::string part_;
};

enum class ScanVerdict { scanned, stopped, differs };

// The scanner against basic_parser on `data`, under the decoder's options.
inline ScanVerdict scan_against_parser(std::string_view data) {
  const json::parse_options options = llm::decoder_parse_options();
  RecordingHandler scanned;
  std::string buffer;
  if (!llm::JsonScanner<RecordingHandler>(scanned, buffer, options.max_depth).run(data)) return ScanVerdict::stopped;
  json::basic_parser<RecordingHandler> parser(options);
  json::error_code ec;
  const std::size_t used = parser.write_some(false, data.data(), data.size(), ec);
  if (ec || used != data.size() || parser.handler().log != scanned.log) return ScanVerdict::differs;
  return ScanVerdict::scanned;
}

// What a SimpleChoice, its logprobs and the usage say, as text: each field its flag says is there
// (read_simple_event() reads no other; a field left from an earlier event is not compared).
inline std::string bits_of(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return std::to_string(bits);
}

// `values` false: each logprob value as "v" (FastEventParser::skip_logprob_values gives them as 0).
inline void describe(std::string& out, const llm::SimpleLogprobToken& token, bool values = true) {
  out += "<";
  if (token.has_token) out += "token " + std::string(token.token.get());
  if (token.has_bytes) out += "|bytes " + token.bytes;
  if (token.has_id) out += "|id " + std::to_string(token.id);
  if (token.has_logprob) out += "|logprob " + (values ? bits_of(token.logprob) : "v");
  if (token.has_top) out += "|top " + std::to_string(token.top_begin) + "-" + std::to_string(token.top_end);
  out += ">";
}

inline std::string describe(std::span<const llm::SimpleChoice> choices, const llm::SimpleUsage& usage,
                            bool values = true) {
  std::string out;
  auto value = [&](double number) { return values ? bits_of(number) : std::string("v"); };
  auto count = [&](const std::optional<std::int64_t>& value) { out += value ? std::to_string(*value) + "," : "-,"; };
  for (const llm::SimpleChoice& choice : choices) {
    out += "choice " + std::to_string(choice.index);
    if (choice.has_text) out += " text " + std::string(choice.text.get());
    if (choice.has_finish_reason) out += " finish " + choice.finish_reason;
    for (const llm::SimpleMessage* message : {&choice.delta, &choice.message}) {
      out += " message " + std::to_string(message->is_object);
      if (message->has_content) out += " content " + std::string(message->content.get());
    }
    if (choice.has_token_ids) {
      out += " ids";
      for (std::int32_t id : choice.token_ids) out += " " + std::to_string(id);
    }
    const llm::SimpleLogprobs& logprobs = choice.logprobs;
    out += "\nlogprobs " + std::to_string(logprobs.is_object);
    if (logprobs.is_object) {
      out += std::to_string(logprobs.content_is_array) + std::to_string(logprobs.tokens_is_array) +
             std::to_string(logprobs.token_logprobs_is_array) + std::to_string(logprobs.top_is_array) +
             std::to_string(logprobs.text_offset_is_array) + std::to_string(logprobs.text_offsets_integers) + "\n";
      for (const auto& entry : logprobs.entries) describe(out, entry, values);
      out += "\n";
      for (const auto& alternative : logprobs.alternatives) describe(out, alternative, values);
      out += "\n";
      for (const auto& token : logprobs.tokens) out += token.is_string ? std::string(token.text.get()) + "," : std::string("-,");
      for (const auto& number : logprobs.token_logprobs) out += number.present ? value(number.value) + "," : "-,";
      for (const auto& top : logprobs.top) {
        out += top.is_object ? std::to_string(top.begin) + "-" + std::to_string(top.end) + "," : std::string("-,");
      }
      for (const auto& label : logprobs.labels) out += std::string(label.label.get()) + "=" + value(label.logprob) + ",";
      for (std::int64_t offset : logprobs.text_offsets) out += std::to_string(offset) + ",";
    }
    out += "\n";
  }
  out += "usage " + std::to_string(usage.present) + std::to_string(usage.details_present) + ":";
  for (const auto* value : {&usage.prompt_tokens, &usage.completion_tokens, &usage.total_tokens,
                            &usage.reasoning_tokens_top, &usage.reasoning_tokens_details}) {
    count(*value);
  }
  return out;
}

// What the fast path's parser makes of `data`: its description, or "gave up".
inline std::string fast_parse(llm::FastEventParser& parser, std::string_view data, bool values = true) {
  const auto choices = parser.parse(data);
  return choices ? describe(*choices, parser.usage(), values) : std::string("gave up");
}

// The fast path's parser with the scanner in front and without it agree on `data`; and one that
// skips logprob values (replay's and record's live decode with --derive-tokens) reads all else
// alike, its ShapeReader reading (and giving up on) exactly the events the converting one does.
class ScanAndParse {
 public:
  ScanAndParse() { skipping_.skip_logprob_values(true); }
  bool agree(std::string_view data) {
    const auto choices = scanning_.parse(data);
    const std::string scanned = choices ? describe(*choices, scanning_.usage()) : std::string("gave up");
    const std::string shape = choices ? describe(*choices, scanning_.usage(), false) : std::string("gave up");
    if (scanned != fast_parse(parsing_, data)) return false;
    return fast_parse(skipping_, data, false) == shape && skipping_.shaped() == scanning_.shaped();
  }
  std::size_t scanned() const { return scanning_.scanned(); }
  std::size_t shaped() const { return scanning_.shaped(); }

 private:
  llm::FastEventParser scanning_{llm::decoder_parse_options(), true};
  llm::FastEventParser parsing_{llm::decoder_parse_options(), false};
  llm::FastEventParser skipping_{llm::decoder_parse_options(), true};
};

}  // namespace retrace::fuzzing
