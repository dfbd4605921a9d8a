// Tests for llm/: SSE framing, dialect detection, response decoding per dialect (on responses
// captured from real servers and on hand-written samples of documented shapes), request rewriting.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <boost/json.hpp>

#include "llm/llm.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
using namespace retrace::llm;
using retrace::testing::read_data;

namespace {

struct ParsedEvent {
  std::string raw;
  std::string data;
  std::string event;
  bool operator==(const ParsedEvent&) const = default;
};

// Feeds `input` in pieces cut at `cuts` (sorted offsets); returns the events and the partial tail.
std::vector<ParsedEvent> parse_in_pieces(std::string_view input, const std::vector<std::size_t>& cuts,
                                         std::string* partial = nullptr) {
  SseParser parser;
  std::vector<ParsedEvent> events;
  std::size_t from = 0;
  auto on_event = [&](const SseEvent& event) {
    events.push_back({std::string(event.raw), std::string(event.data), std::string(event.event)});
  };
  for (std::size_t cut : cuts) {
    parser.feed(input.substr(from, cut - from), on_event);
    from = cut;
  }
  parser.feed(input.substr(from), on_event);
  const std::string tail = parser.take_partial();
  if (partial) *partial = tail;
  return events;
}

std::string concatenated_raws(const std::vector<ParsedEvent>& events) {
  std::string all;
  for (const ParsedEvent& event : events) all += event.raw;
  return all;
}

// Decodes an SSE body the way the recorder does: SSE events into a ResponseDecoder.
Exchange decode_stream(std::string_view body, Dialect dialect) {
  ResponseDecoder decoder(dialect);
  SseParser parser;
  std::int64_t offset = 0;
  parser.feed(body, [&](const SseEvent& event) { decoder.on_event(event.data, offset += 1000); });
  Exchange exchange;
  decoder.finish(exchange);
  CHECK(decoder.finished());
  return exchange;
}

Exchange decode_body(std::string_view body, Dialect dialect) {
  ResponseDecoder decoder(dialect);
  decoder.on_body(body, 5000);
  Exchange exchange;
  decoder.finish(exchange);
  return exchange;
}

std::vector<std::int32_t> ids_of(const Choice& choice) {
  std::vector<std::int32_t> ids;
  for (const Token& token : choice.tokens) ids.push_back(token.id);
  return ids;
}

std::vector<std::int32_t> ints_of(const boost::json::array& array) {
  std::vector<std::int32_t> ids;
  for (const auto& value : array) ids.push_back(static_cast<std::int32_t>(value.as_int64()));
  return ids;
}

boost::json::object json_file(const std::string& relative) {
  return boost::json::parse(read_data(relative)).as_object();
}

std::string json_string(const boost::json::value& value) { return std::string(value.as_string()); }

// A stream exercising every framing feature: BOM, CRLF, bare CR, LF, comments, event names,
// multi-line data, "data:" without a space, a field with no colon, id/retry fields.
const std::string kTrickyStream =
    "\xEF\xBB\xBF"
    ": keep-alive comment\r\n"
    "data: {\"a\":1}\r\n\r\n"
    "event: delta\n"
    "data:first line\n"
    "data: second line\n"
    "id: 7\n"
    "retry: 100\n\n"
    "data: cr only\r\r"
    ": just a comment\n\n"
    "data\n\n"
    "data: [DONE]\n\n"
    "data: unterminated";

}  // namespace

// ---------------------------------------------------------------------------------------------
// SSE framing

TEST_CASE("SSE parser reads every framing feature of one stream fed whole") {
  std::string partial;
  const auto events = parse_in_pieces(kTrickyStream, {}, &partial);
  REQUIRE(events.size() == 6);
  CHECK(events[0].data == "{\"a\":1}");
  CHECK(events[0].raw == "\xEF\xBB\xBF: keep-alive comment\r\ndata: {\"a\":1}\r\n\r\n");
  CHECK(events[1].event == "delta");
  CHECK(events[1].data == "first line\nsecond line");
  CHECK(events[2].data == "cr only");
  CHECK(events[3].data == "");  // a comment-only block still accounts for its bytes
  CHECK(events[3].raw == ": just a comment\n\n");
  CHECK(events[4].data == "");  // "data" with no colon is an empty data line
  CHECK(events[5].data == "[DONE]");
  CHECK(partial == "data: unterminated");
  CHECK(concatenated_raws(events) + partial == kTrickyStream);
}

TEST_CASE("SSE parser gives the same events for every split point of a stream") {
  const auto whole = parse_in_pieces(kTrickyStream, {});
  for (std::size_t cut = 0; cut <= kTrickyStream.size(); ++cut) {
    std::string partial;
    const auto events = parse_in_pieces(kTrickyStream, {cut}, &partial);
    INFO("cut at " << cut);
    std::vector<std::string> data;
    for (const auto& event : events) data.push_back(event.data);
    std::vector<std::string> whole_data;
    for (const auto& event : whole) whole_data.push_back(event.data);
    CHECK(data == whole_data);
    CHECK(concatenated_raws(events) + partial == kTrickyStream);
  }
}

TEST_CASE("SSE parser gives the same events for every pair of split points and byte by byte") {
  const auto whole = parse_in_pieces(kTrickyStream, {});
  auto data_of = [](const std::vector<ParsedEvent>& events) {
    std::vector<std::string> data;
    for (const auto& event : events) data.push_back(event.data + "|" + event.event);
    return data;
  };
  for (std::size_t first = 0; first <= kTrickyStream.size(); first += 3) {
    for (std::size_t second = first; second <= kTrickyStream.size(); ++second) {
      std::string partial;
      const auto events = parse_in_pieces(kTrickyStream, {first, second}, &partial);
      REQUIRE(data_of(events) == data_of(whole));
      REQUIRE(concatenated_raws(events) + partial == kTrickyStream);
    }
  }
  std::vector<std::size_t> every_byte;
  for (std::size_t i = 1; i < kTrickyStream.size(); ++i) every_byte.push_back(i);
  CHECK(data_of(parse_in_pieces(kTrickyStream, every_byte)) == data_of(whole));
}

TEST_CASE("SSE parser keeps the raw bytes of each event exact when events arrive whole") {
  const std::string stream = "data: a\r\n\r\ndata: b\n\ndata: c\r\r";
  const auto events = parse_in_pieces(stream, {});
  REQUIRE(events.size() == 3);
  CHECK(events[0].raw == "data: a\r\n\r\n");
  CHECK(events[1].raw == "data: b\n\n");
  CHECK(events[2].raw == "data: c\r\r");
}

TEST_CASE("SSE parser frames the events that arrive whole in the bytes fed without copying them") {
  // The first event is split across the two feeds and is assembled; the two after it, and the
  // single data line of each, are views of the second feed's bytes.
  const std::string first = "data: a\nda";
  const std::string second = "ta: b\n\ndata: c\n\nevent: e\ndata: d1\ndata: d2\n\ndata: tail";
  SseParser parser;
  std::vector<ParsedEvent> events;
  std::vector<bool> raw_in_place, data_in_place;
  auto inside = [&](std::string_view view) {
    return view.data() >= second.data() && view.data() + view.size() <= second.data() + second.size();
  };
  auto on_event = [&](const SseEvent& event) {
    events.push_back({std::string(event.raw), std::string(event.data), std::string(event.event)});
    raw_in_place.push_back(inside(event.raw));
    data_in_place.push_back(inside(event.data));
  };
  parser.feed(first, on_event);
  parser.feed(second, on_event);
  REQUIRE(events.size() == 3);
  CHECK(events[0] == ParsedEvent{"data: a\ndata: b\n\n", "a\nb", ""});
  CHECK(events[1] == ParsedEvent{"data: c\n\n", "c", ""});
  CHECK(events[2] == ParsedEvent{"event: e\ndata: d1\ndata: d2\n\n", "d1\nd2", "e"});
  CHECK(raw_in_place == std::vector<bool>{false, true, true});
  CHECK(data_in_place == std::vector<bool>{false, true, false});  // two data lines are joined
  CHECK(parser.take_partial() == "data: tail");
}

TEST_CASE("SSE parser moves the LF of a CRLF split after a blank line into the next event") {
  // The \r ends the event at once (no stall waiting for a \n); the late \n is kept, not lost.
  const std::string stream = "data: a\r\n\r\ndata: b\r\n\r\n";
  const std::size_t cut = std::string("data: a\r\n\r").size();
  std::string partial;
  const auto events = parse_in_pieces(stream, {cut}, &partial);
  REQUIRE(events.size() == 2);
  CHECK(events[0].raw == "data: a\r\n\r");
  CHECK(events[1].raw == "\ndata: b\r\n\r\n");
  CHECK(events[1].data == "b");
  CHECK(partial.empty());
}

TEST_CASE("SSE parser reports an unterminated event as partial and starts afresh after it") {
  SseParser parser;
  int events = 0;
  parser.feed("data: {\"x\":", [&](const SseEvent&) { ++events; });
  CHECK(events == 0);
  CHECK(parser.has_partial());
  CHECK(parser.take_partial() == "data: {\"x\":");
  CHECK_FALSE(parser.has_partial());
  std::string data;
  parser.feed("data: next\n\n", [&](const SseEvent& event) { data = event.data; });
  CHECK(data == "next");
}

TEST_CASE("SSE parser handles a BOM split across feeds and a stream that only looks like one") {
  std::vector<std::string> data;
  SseParser parser;
  auto collect = [&](const SseEvent& event) { data.emplace_back(event.data); };
  parser.feed("\xEF", collect);
  parser.feed("\xBB", collect);
  parser.feed("\xBF" "data: x\n\n", collect);
  REQUIRE(data == std::vector<std::string>{"x"});
  SseParser other;
  data.clear();
  other.feed("\xEF" "data: y\n\n", collect);  // not a BOM: the line's name is "\xEFdata"
  CHECK(data == std::vector<std::string>{""});
}

TEST_CASE("SSE parser assembles a megabyte event fed one byte at a time") {
  std::string payload(1 << 20, 'x');
  const std::string stream = "data: " + payload + "\n\n";
  SseParser parser;
  std::size_t size = 0;
  int events = 0;
  for (char c : stream) {
    parser.feed(std::string_view(&c, 1), [&](const SseEvent& event) {
      ++events;
      size = event.data.size();
    });
  }
  CHECK(events == 1);
  CHECK(size == payload.size());
}

// ---------------------------------------------------------------------------------------------
// Dialects

TEST_CASE("Dialect detection reads the path - ignoring query - prefix and trailing slash") {
  CHECK(detect_dialect("/v1/completions", "{}") == Dialect::openai_completions);
  CHECK(detect_dialect("/v1/chat/completions", "{}") == Dialect::openai_chat);
  CHECK(detect_dialect("/chat/completions", "{}") == Dialect::openai_chat);
  CHECK(detect_dialect("/openai/v1/chat/completions?api-version=2024-06-01", "{}") == Dialect::openai_chat);
  CHECK(detect_dialect("/v1/completions/", "{}") == Dialect::openai_completions);
  CHECK(detect_dialect("/completion", "{\"prompt\":\"x\"}") == Dialect::llamacpp_completion);
  CHECK(detect_dialect("/completions", "{\"prompt\":\"x\",\"n_predict\":8}") == Dialect::llamacpp_completion);
  CHECK(detect_dialect("/completions", "{\"prompt\":\"x\",\"max_tokens\":8}") == Dialect::openai_completions);
  CHECK(detect_dialect("/generate", "{}") == Dialect::tgi_generate);
  CHECK(detect_dialect("/generate_stream", "{}") == Dialect::tgi_generate);
  CHECK(detect_dialect("/generate", R"({"inputs":"x","parameters":{}})") == Dialect::tgi_generate);
  CHECK(detect_dialect("/generate", R"({"text":"x","sampling_params":{}})") == Dialect::unknown);  // SGLang
  CHECK(detect_dialect("/", R"({"inputs":"x"})") == Dialect::tgi_generate);
  CHECK(detect_dialect("/", "{}") == Dialect::unknown);
  CHECK(detect_dialect("/v1/models", "") == Dialect::unknown);
  CHECK(detect_dialect("/health", "") == Dialect::unknown);
  CHECK(detect_dialect("", "") == Dialect::unknown);
  CHECK(to_string(Dialect::openai_chat) == "openai_chat");
  CHECK(to_string(Dialect::unknown) == "");
}

// ---------------------------------------------------------------------------------------------
// llama.cpp, on responses captured from a real server (tests/data/llamacpp/README.txt)

TEST_CASE("llama.cpp native stream decodes to the ids and text of the non-stream answer") {
  const Exchange stream = decode_stream(read_data("llamacpp/completion-native-stream.sse"), Dialect::llamacpp_completion);
  const auto body = json_file("llamacpp/completion-native-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  REQUIRE(choice.tokens.size() == 64);
  const auto expected_ids = ints_of(body.at("tokens").as_array());
  const auto ids = ids_of(choice);
  CHECK(std::vector<std::int32_t>(ids.begin(), ids.begin() + expected_ids.size()) == expected_ids);
  // Same prompt at temperature 0: the 8-token answer is a prefix of the 64-token stream.
  const std::string content = json_string(body.at("content"));
  CHECK(choice_text(choice).substr(0, content.size()) == content);
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.prompt_tokens == 6);
  CHECK(stream.usage.completion_tokens == 64);
  CHECK(stream.usage.total_tokens == 70);
  // n_probs 3: logprob and three alternatives, best first, with ids and bytes.
  const Token& first = choice.tokens[0];
  CHECK(first.id == 24453);
  CHECK(first.bytes == "isie");
  CHECK(first.has_logprob);
  CHECK(first.logprob == Approx(-6.205460548400879));
  REQUIRE(first.top.size() == 3);
  CHECK(first.top[1].id == 10953);
  CHECK(first.top[1].bytes == " lleg");
  CHECK(first.top[0].logprob >= first.top[1].logprob);
  CHECK(first.top[1].logprob >= first.top[2].logprob);
  CHECK(stream.dialect == "llamacpp_completion");
  CHECK(stream.decode_note.empty());
}

TEST_CASE("llama.cpp native stream without a DONE marker is finished by its stop event") {
  const std::string sse = read_data("llamacpp/completion-native-stream.sse");
  REQUIRE(sse.find("[DONE]") == std::string::npos);
  ResponseDecoder decoder(Dialect::llamacpp_completion);
  SseParser parser;
  std::vector<std::string> data;
  parser.feed(sse, [&](const SseEvent& event) { data.emplace_back(event.data); });
  REQUIRE(data.size() == 65);
  for (std::size_t i = 0; i + 1 < data.size(); ++i) decoder.on_event(data[i], 0);
  CHECK_FALSE(decoder.finished());
  decoder.on_event(data.back(), 0);
  CHECK(decoder.finished());
}

TEST_CASE("llama.cpp native non-stream body gives the ids of its tokens array and its content") {
  const Exchange exchange = decode_body(read_data("llamacpp/completion-native-nonstream.json"), Dialect::llamacpp_completion);
  const auto body = json_file("llamacpp/completion-native-nonstream.json");
  REQUIRE(exchange.choices.size() == 1);
  const Choice& choice = exchange.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == ints_of(body.at("tokens").as_array()));
  CHECK(choice_text(choice) == json_string(body.at("content")));
  CHECK(choice.finish_reason == "length");
  CHECK(exchange.usage.prompt_tokens == 6);
  CHECK(exchange.usage.completion_tokens == 8);
  // Ids without per-token text: said so rather than silently.
  CHECK(exchange.decode_note.find("no per-token text") != std::string::npos);
}

TEST_CASE("llama.cpp merges byte tokens of one character into one event and the ids stay in order") {
  // The quirk from README.txt: two byte tokens of "克" (E5 85 8B) arrive in one event.
  const std::string event =
      R"({"index":0,"content":"克","tokens":[229,31510],"stop":false,"completion_probabilities":[)"
      R"({"id":229,"token":"\ufffd","bytes":[229],"logprob":-1.0,"top_logprobs":[]},)"
      R"({"id":31510,"token":"\ufffd","bytes":[133,139],"logprob":-2.0,"top_logprobs":[]}]})";
  const std::string ids_only = R"({"index":0,"content":"克","tokens":[229,31510],"stop":false})";
  for (const std::string& data : {event, ids_only}) {
    ResponseDecoder decoder(Dialect::llamacpp_completion);
    decoder.on_event(data, 7);
    decoder.on_event(R"({"index":0,"content":"","tokens":[],"stop":true,"stop_type":"eos"})", 9);
    Exchange exchange;
    decoder.finish(exchange);
    REQUIRE(exchange.choices.size() == 1);
    const Choice& choice = exchange.choices[0];
    CHECK(ids_of(choice) == std::vector<std::int32_t>{229, 31510});
    CHECK(choice_text(choice) == "克");
    CHECK(choice.tokens[1].offset_ns == 7);
    CHECK(choice.finish_reason == "stop");
    CHECK(choice.kind == TokenKind::token_ids);
  }
}

TEST_CASE("llama.cpp v1 completions stream with logprobs gives token ids in the chat-style shape") {
  const Exchange stream = decode_stream(read_data("llamacpp/v1-completions-stream-logprobs.sse"), Dialect::openai_completions);
  const Exchange native = decode_stream(read_data("llamacpp/completion-native-stream.sse"), Dialect::llamacpp_completion);
  const auto body = json_file("llamacpp/v1-completions-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(choice.tokens.size() == 64);
  CHECK(ids_of(choice) == ids_of(native.choices.at(0)));
  CHECK(choice_text(choice) == json_string(body.at("choices").at(0).at("text")));
  CHECK(choice.tokens[0].top.size() == 3);
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.completion_tokens == 64);
  CHECK(stream.usage.prompt_tokens == 6);
  CHECK(stream.decode_note.empty());
}

TEST_CASE("llama.cpp v1 completions stream without logprobs gives one text delta per event") {
  const Exchange stream = decode_stream(read_data("llamacpp/v1-completions-stream.sse"), Dialect::openai_completions);
  const auto body = json_file("llamacpp/v1-completions-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::text_deltas);
  CHECK(choice.tokens.size() == 64);
  CHECK(choice.tokens[0].id == -1);
  CHECK(choice.tokens[0].bytes == "isie");
  CHECK(choice_text(choice) == json_string(body.at("choices").at(0).at("text")));
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.total_tokens == 70);
  // Offsets are the arrival of each event (decode_stream numbers them 1000, 2000, ...).
  CHECK(choice.tokens[0].offset_ns == 1000);
  CHECK(choice.tokens[1].offset_ns == 2000);
}

TEST_CASE("llama.cpp v1 completions non-stream bodies decode with and without logprobs") {
  const Exchange plain = decode_body(read_data("llamacpp/v1-completions-nonstream.json"), Dialect::openai_completions);
  REQUIRE(plain.choices.size() == 1);
  CHECK(plain.choices[0].kind == TokenKind::text_deltas);
  CHECK(plain.choices[0].tokens.size() == 1);
  CHECK(plain.usage.completion_tokens == 64);

  const Exchange logprobs = decode_body(read_data("llamacpp/v1-completions-nonstream-logprobs.json"), Dialect::openai_completions);
  const Exchange native = decode_stream(read_data("llamacpp/completion-native-stream.sse"), Dialect::llamacpp_completion);
  REQUIRE(logprobs.choices.size() == 1);
  const Choice& choice = logprobs.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  const auto native_ids = ids_of(native.choices.at(0));
  CHECK(ids_of(choice) == std::vector<std::int32_t>(native_ids.begin(), native_ids.begin() + 4));
  CHECK(choice_text(choice) == "isie depois ekonom чо");
  CHECK(choice.tokens[3].bytes == " чо");
  CHECK(choice.tokens[0].top.size() == 2);
  CHECK(logprobs.decode_note.empty());
}

TEST_CASE("llama.cpp chat stream takes usage from the final chunk with no choices") {
  const Exchange stream = decode_stream(read_data("llamacpp/v1-chat-completions-stream.sse"), Dialect::openai_chat);
  const auto body = json_file("llamacpp/v1-chat-completions-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::text_deltas);
  CHECK(choice.tokens.size() == 16);
  CHECK(choice_text(choice) == json_string(body.at("choices").at(0).at("message").at("content")));
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.prompt_tokens == 34);
  CHECK(stream.usage.completion_tokens == 16);
  CHECK(stream.usage.total_tokens == 50);

  const Exchange nonstream = decode_body(read_data("llamacpp/v1-chat-completions-nonstream.json"), Dialect::openai_chat);
  REQUIRE(nonstream.choices.size() == 1);
  CHECK(choice_text(nonstream.choices[0]) == choice_text(choice));
  CHECK(nonstream.usage.total_tokens == 50);
}

TEST_CASE("llama.cpp probabilities spelled as prob and top_probs - or the old probs - become logprobs") {
  ResponseDecoder decoder(Dialect::llamacpp_completion);
  decoder.on_event(R"({"content":" a","tokens":[264],"stop":false,"completion_probabilities":[)"
                   R"({"id":264,"token":" a","bytes":[32,97],"prob":0.5,)"
                   R"("top_probs":[{"id":9,"token":" b","bytes":[32,98],"prob":0.25},{"id":264,"token":" a","bytes":[32,97],"prob":0.5}]}]})",
                   1);
  decoder.on_event(R"({"content":" c","stop":false,"completion_probabilities":[)"
                   R"({"content":" c","probs":[{"tok_str":" c","prob":1.0},{"tok_str":" d","prob":0.0}]}]})",
                   2);
  decoder.on_event(R"({"content":"","stop":true,"stop_type":"word"})", 3);
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == 1);
  const Choice& choice = exchange.choices[0];
  REQUIRE(choice.tokens.size() == 2);
  CHECK(choice.tokens[0].logprob == Approx(std::log(0.5)));
  REQUIRE(choice.tokens[0].top.size() == 2);
  CHECK(choice.tokens[0].top[0].id == 264);
  CHECK(choice.tokens[0].top[1].bytes == " b");
  CHECK(choice.tokens[1].bytes == " c");
  CHECK(choice.tokens[1].top[0].bytes == " c");
  CHECK(choice.tokens[1].top[1].logprob < -1e30);  // probability 0: finite, lowest
  CHECK(choice.kind == TokenKind::logprob_tokens);  // the old format has no ids
  CHECK(choice.finish_reason == "stop");
}

// ---------------------------------------------------------------------------------------------
// vLLM (hand-written from vLLM's protocol definitions)

TEST_CASE("vLLM completions stream maps token_id strings to ids and splits coalesced text by offset") {
  const Exchange stream = decode_stream(read_data("vllm/completions-stream-token-ids.sse"), Dialect::openai_completions);
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == std::vector<std::int32_t>{12366, 374, 6419, 53050, 13});
  REQUIRE(choice.tokens.size() == 5);
  CHECK(choice.tokens[0].bytes == " Paris");
  CHECK(choice.tokens[1].bytes == " is");
  CHECK(choice.tokens[2].bytes == " nice");
  CHECK(choice.tokens[3].bytes == " café");  // text_offset counts code points, not bytes
  CHECK(choice.tokens[4].bytes == ".");
  CHECK(choice.tokens[2].offset_ns == 2000);
  CHECK(choice.tokens[2].logprob == Approx(-1.25));
  REQUIRE(choice.tokens[1].top.size() == 2);
  CHECK(choice.tokens[1].top[0].id == 374);
  CHECK(choice.tokens[1].top[1].id == 11);
  CHECK(choice.finish_reason == "stop");
  CHECK(stream.usage.prompt_tokens == 5);
  CHECK(stream.usage.completion_tokens == 5);
  CHECK(stream.decode_note.empty());
}

TEST_CASE("vLLM chat stream with logprobs and token ids keeps the delta text as token bytes") {
  const Exchange stream = decode_stream(read_data("vllm/chat-stream-token-ids.sse"), Dialect::openai_chat);
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == std::vector<std::int32_t>{9707, 0});
  CHECK(choice.tokens[0].bytes == "Hello");  // not the bytes of the string "token_id:9707"
  CHECK(choice_text(choice) == "Hello!");
  REQUIRE(choice.tokens[0].top.size() == 2);
  CHECK(choice.tokens[0].top[1].id == 13048);
  CHECK(choice.finish_reason == "stop");
  CHECK(stream.usage.total_tokens == 11);
}

TEST_CASE("vLLM completions with n=2 interleave choices by index") {
  const Exchange stream = decode_stream(read_data("vllm/completions-stream-n2.sse"), Dialect::openai_completions);
  REQUIRE(stream.choices.size() == 2);
  CHECK(stream.choices[0].index == 0);
  CHECK(stream.choices[1].index == 1);
  CHECK(choice_text(stream.choices[0]) == " red apple");
  CHECK(choice_text(stream.choices[1]) == " blue sky");
  CHECK(stream.choices[0].finish_reason == "stop");
  CHECK(stream.choices[1].finish_reason == "length");
  CHECK(stream.choices[0].kind == TokenKind::text_deltas);
  CHECK(stream.usage.completion_tokens == 4);
}

TEST_CASE("vLLM non-stream completions decode legacy logprobs - token_id strings and token_ids") {
  const Exchange legacy = decode_body(read_data("vllm/completions-nonstream-logprobs.json"), Dialect::openai_completions);
  REQUIRE(legacy.choices.size() == 1);
  CHECK(legacy.choices[0].kind == TokenKind::logprob_tokens);
  REQUIRE(legacy.choices[0].tokens.size() == 2);
  CHECK(legacy.choices[0].tokens[1].bytes == " is");
  CHECK(legacy.choices[0].tokens[1].top[1].bytes == ",");
  CHECK(legacy.choices[0].tokens[0].offset_ns == 5000);

  const Exchange strings = decode_body(read_data("vllm/completions-nonstream-token-id-strings.json"), Dialect::openai_completions);
  REQUIRE(strings.choices.size() == 1);
  CHECK(strings.choices[0].kind == TokenKind::token_ids);
  CHECK(ids_of(strings.choices[0]) == std::vector<std::int32_t>{53050, 7906});
  CHECK(strings.choices[0].tokens[0].bytes == " café");
  CHECK(strings.choices[0].tokens[1].bytes == " au");
  CHECK(strings.decode_note.empty());

  const Exchange ids = decode_body(read_data("vllm/completions-nonstream-token-ids.json"), Dialect::openai_completions);
  REQUIRE(ids.choices.size() == 1);
  CHECK(ids.choices[0].kind == TokenKind::token_ids);
  CHECK(ids_of(ids.choices[0]) == std::vector<std::int32_t>{12366, 374});
  CHECK(choice_text(ids.choices[0]) == " Paris is");
}

TEST_CASE("Legacy logprobs spell pieces of a character as bytes labels and decode to those bytes") {
  ResponseDecoder decoder(Dialect::openai_completions);
  decoder.on_event(R"({"choices":[{"index":0,"text":"😊","logprobs":{"tokens":["bytes:\\xf0\\x9f\\x98","bytes:\\x8a"],)"
                   R"("token_logprobs":[-0.5,-0.25],"top_logprobs":[{"bytes:\\xf0\\x9f\\x98":-0.5},{"bytes:\\x8a":-0.25}],)"
                   R"("text_offset":[0,1]}}]})",
                   1);
  decoder.on_event("[DONE]", 2);
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == 1);
  REQUIRE(exchange.choices[0].tokens.size() == 2);
  CHECK(exchange.choices[0].tokens[0].bytes == "\xF0\x9F\x98");
  CHECK(exchange.choices[0].tokens[1].bytes == "\x8A");
  CHECK(exchange.choices[0].tokens[1].top.at(0).bytes == "\x8A");
  CHECK(exchange.choices[0].kind == TokenKind::logprob_tokens);
  CHECK(exchange.decode_note.empty());
}

// ---------------------------------------------------------------------------------------------
// TGI and OpenAI

TEST_CASE("TGI stream gives ids per event - drops special tokens' text and ends at its last event") {
  const Exchange stream = decode_stream(read_data("tgi/generate-stream.sse"), Dialect::tgi_generate);
  REQUIRE(stream.choices.size() == 1);  // TGI's "index" counts tokens, not choices
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == std::vector<std::int32_t>{18925, 6975, 2});
  CHECK(choice_text(choice) == " Deep learning");  // as generated_text, without "</s>"
  CHECK(choice.tokens[2].has_logprob);
  REQUIRE(choice.tokens[0].top.size() == 2);
  CHECK(choice.tokens[0].top[1].bytes == " Machine");
  CHECK(choice.finish_reason == "stop");
  CHECK(stream.usage.completion_tokens == 3);
  CHECK(stream.usage.prompt_tokens == 4);
}

TEST_CASE("TGI non-stream answers give ids with details and text without") {
  const Exchange details = decode_body(read_data("tgi/generate.json"), Dialect::tgi_generate);
  REQUIRE(details.choices.size() == 1);
  CHECK(details.choices[0].kind == TokenKind::token_ids);
  CHECK(ids_of(details.choices[0]) == std::vector<std::int32_t>{18925, 6975, 374});
  CHECK(choice_text(details.choices[0]) == " Deep learning is");
  CHECK(details.choices[0].tokens[0].top.size() == 2);
  CHECK(details.choices[0].finish_reason == "length");
  CHECK(details.usage.completion_tokens == 3);

  const Exchange plain = decode_body(read_data("tgi/generate-no-details.json"), Dialect::tgi_generate);
  REQUIRE(plain.choices.size() == 1);
  CHECK(plain.choices[0].kind == TokenKind::text_deltas);
  CHECK(choice_text(plain.choices[0]) == " Deep learning is");
}

TEST_CASE("alternatives come out best first with ties in the order sent for few and many") {
  for (const std::size_t count : {std::size_t{5}, std::size_t{40}}) {
    // Logprobs -(i % 4): four ties at each of four levels, interleaved.
    std::string top;
    std::vector<std::string> expected;
    for (int level = 0; level < 4; ++level) {
      for (std::size_t i = 0; i < count; ++i) {
        if (static_cast<int>(i % 4) == level) expected.push_back("t" + std::to_string(i));
      }
    }
    for (std::size_t i = 0; i < count; ++i) {
      top += (i ? "," : "") + std::string("\"t") + std::to_string(i) + "\":" + std::to_string(-double(i % 4));
    }
    const std::string stream = "data: {\"choices\":[{\"index\":0,\"text\":\"t0\",\"logprobs\":{\"tokens\":[\"t0\"],"
                               "\"token_logprobs\":[0],\"top_logprobs\":[{" + top + "}]}}]}\n\ndata: [DONE]\n\n";
    const Exchange exchange = decode_stream(stream, Dialect::openai_completions);
    REQUIRE(exchange.choices.size() == 1);
    REQUIRE(exchange.choices[0].tokens.size() == 1);
    std::vector<std::string> sorted;
    for (const Alternative& alternative : exchange.choices[0].tokens[0].top) sorted.push_back(alternative.bytes);
    CHECK(sorted == expected);
  }
}

TEST_CASE("OpenAI chat logprobs keep byte tokens of a split character as their bytes") {
  const Exchange stream = decode_stream(read_data("openai/chat-stream-logprobs.sse"), Dialect::openai_chat);
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::logprob_tokens);
  REQUIRE(choice.tokens.size() == 3);
  CHECK(choice.tokens[1].bytes == "\xF0\x9F\x98");
  CHECK(choice.tokens[2].bytes == "\x8A");
  CHECK(choice_text(choice) == "Hi😊");
  REQUIRE(choice.tokens[0].top.size() == 2);
  CHECK(choice.tokens[0].top[0].bytes == "Hi");  // sorted best first though sent otherwise
  CHECK(choice.tokens[0].top[1].bytes == "Hello");
  CHECK(stream.usage.total_tokens == 14);
  CHECK(stream.decode_note.empty());

  const Exchange body = decode_body(read_data("openai/chat-nonstream-logprobs.json"), Dialect::openai_chat);
  REQUIRE(body.choices.size() == 1);
  REQUIRE(body.choices[0].tokens.size() == 3);
  CHECK(body.choices[0].tokens[2].bytes == stream.choices[0].tokens[2].bytes);
  CHECK(choice_text(body.choices[0]) == "Hi😊");
  CHECK(body.choices[0].kind == TokenKind::logprob_tokens);
  CHECK(body.choices[0].finish_reason == "stop");
}

TEST_CASE("Chat reasoning - answers and tool call arguments are generated text each in its own part") {
  ResponseDecoder decoder(Dialect::openai_chat);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]})", 1);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"content":"Sure."}}]})", 2);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"x\""}}]}}]})", 3);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]})", 4);
  decoder.on_event("[DONE]", 5);
  Exchange exchange;
  decoder.finish(exchange);
  // Not one joined string (that made a tool call equal to text): reasoning, answer and the call,
  // each its own stream, in the order generated; every part carries the choice's finish reason.
  REQUIRE(exchange.choices.size() == 3);
  CHECK(exchange.choices[0].part == Part::reasoning);
  CHECK(choice_text(exchange.choices[0]) == "think");
  CHECK(exchange.choices[1].part == Part::content);
  CHECK(choice_text(exchange.choices[1]) == "Sure.");
  CHECK(exchange.choices[2].part == Part::tool_call);
  CHECK(exchange.choices[2].tool_name == "f");
  CHECK(choice_text(exchange.choices[2]) == "{\"x\":1}");
  CHECK(exchange.choices[2].tokens.size() == 2);
  for (const Choice& choice : exchange.choices) CHECK(choice.finish_reason == "tool_calls");
}

// ---------------------------------------------------------------------------------------------
// Bad data

TEST_CASE("Decoder keeps what decoded around a malformed event and names the event") {
  ResponseDecoder decoder(Dialect::openai_completions);
  decoder.on_event(R"({"choices":[{"index":0,"text":"a"}]})", 1);
  decoder.on_event(R"({"choices":[{"index":0,"text":)", 2);
  decoder.on_event(R"({"choices":[{"index":0,"text":"b","finish_reason":"stop"}]})", 3);
  decoder.on_event("[DONE]", 4);
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == 1);
  CHECK(choice_text(exchange.choices[0]) == "ab");
  CHECK(exchange.decode_note.find("event 1: not JSON") != std::string::npos);
}

TEST_CASE("Decoder notes a server error event and a stream that ends without its end marker") {
  ResponseDecoder decoder(Dialect::openai_chat);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"content":"x"}}]})", 1);
  decoder.on_event(R"({"object":"error","message":"out of memory","code":500})", 2);
  Exchange exchange;
  decoder.finish(exchange);
  CHECK(choice_text(exchange.choices.at(0)) == "x");
  CHECK(exchange.decode_note.find("event 1: server error: out of memory") != std::string::npos);
  CHECK(exchange.decode_note.find("before its end marker") != std::string::npos);
}

TEST_CASE("Decoder guesses the dialect of an unknown path from the response") {
  const Exchange exchange = decode_body(read_data("llamacpp/v1-chat-completions-nonstream.json"), Dialect::unknown);
  CHECK(exchange.dialect == "openai_chat");
  REQUIRE(exchange.choices.size() == 1);
  CHECK(exchange.decode_note.find("guessed") != std::string::npos);
}

TEST_CASE("decode_exchange re-decodes a stored stream from its raw event bytes") {
  Exchange exchange;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = R"({"prompt":"The quick brown fox","max_tokens":64,"stream":true,"logprobs":3})";
  exchange.response.status = 200;
  exchange.response.streamed = true;
  // Store the body in uneven chunks, as a recorder might see them arrive.
  const std::string sse = read_data("llamacpp/v1-completions-stream-logprobs.sse");
  for (std::size_t at = 0, step = 1; at < sse.size(); at += step, step = step * 7 % 1013 + 1) {
    exchange.response.events.push_back({static_cast<std::int64_t>(at), sse.substr(at, step)});
  }
  decode_exchange(exchange);
  const Exchange direct = decode_stream(sse, Dialect::openai_completions);
  REQUIRE(exchange.choices.size() == 1);
  CHECK(ids_of(exchange.choices[0]) == ids_of(direct.choices[0]));
  CHECK(choice_text(exchange.choices[0]) == choice_text(direct.choices[0]));
  CHECK(exchange.dialect == "openai_completions");
  CHECK(exchange.usage == direct.usage);
  CHECK(exchange.decode_note.empty());
}

TEST_CASE("decode_exchange notes a cut stream and an error status") {
  Exchange cut;
  cut.request.target = "/v1/chat/completions";
  cut.response.status = 200;
  cut.response.streamed = true;
  cut.response.events.push_back({10, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"});
  cut.response.events.push_back({20, "data: {\"choices\":[{\"ind"});
  decode_exchange(cut);
  REQUIRE(cut.choices.size() == 1);
  CHECK(choice_text(cut.choices[0]) == "hi");
  CHECK(cut.choices[0].tokens[0].offset_ns == 10);
  CHECK(cut.decode_note.find("stream cut") != std::string::npos);

  Exchange failed;
  failed.request.target = "/v1/chat/completions";
  failed.response.status = 500;
  failed.response.body = R"({"error":{"message":"boom"}})";
  decode_exchange(failed);
  CHECK(failed.choices.empty());
  CHECK(failed.decode_note.find("HTTP 500") != std::string::npos);
  CHECK(failed.dialect == "openai_chat");

  Exchange plain;
  plain.request.target = "/completion";
  plain.request.body = R"({"prompt":"x","n_predict":8})";
  plain.response.status = 200;
  plain.response.body = read_data("llamacpp/completion-native-nonstream.json");
  plain.end_ns = 4242;
  decode_exchange(plain);
  REQUIRE(plain.choices.size() == 1);
  CHECK(plain.choices[0].tokens.size() == 8);
  CHECK(plain.choices[0].tokens[0].offset_ns == 4242);
}

TEST_CASE("feed_sse keeps every byte of a cut stream and decodes each event as it completes") {
  const std::string sse = read_data("llamacpp/v1-completions-stream-logprobs.sse");
  const std::string tail = "data: {\"choices\":[{\"ind";
  const std::string input = sse + tail;
  ResponseDecoder decoder(Dialect::openai_completions);
  SseParser parser;
  std::vector<Event> events;
  std::size_t completed = 0;
  for (std::size_t at = 0; at < input.size(); at += 97) {
    completed += feed_sse(parser, std::string_view(input).substr(at, 97), static_cast<std::int64_t>(at), &decoder, &events);
  }
  CHECK(completed == events.size());
  keep_partial_event(parser, 7, events);
  REQUIRE(events.size() == completed + 1);
  CHECK(events.back() == Event{7, tail});
  std::string all;
  for (const Event& event : events) all += event.data;
  CHECK(all == input);

  Exchange exchange;
  decoder.finish(exchange);
  const Exchange direct = decode_stream(sse, Dialect::openai_completions);
  REQUIRE(exchange.choices.size() == 1);
  CHECK(ids_of(exchange.choices[0]) == ids_of(direct.choices[0]));
  CHECK(choice_text(exchange.choices[0]) == choice_text(direct.choices[0]));
}

TEST_CASE("feed_sse passes keep-alive events to the decoder so its notes count every stored event") {
  ResponseDecoder decoder(Dialect::openai_chat);
  SseParser parser;
  std::vector<Event> events;
  feed_sse(parser, "data: [DONE]\n\n: ping\n\ndata: {\"choices\":[]}\n\n", 1, &decoder, &events);
  REQUIRE(events.size() == 3);
  Exchange exchange;
  decoder.finish(exchange);
  CHECK(exchange.decode_note.find("event 2: data after the end of the stream") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Request side

TEST_CASE("Token id modes parse by name") {
  CHECK(token_id_mode_from_string("vllm") == TokenIdMode::vllm);
  CHECK(token_id_mode_from_string("llamacpp") == TokenIdMode::llamacpp);
  CHECK(token_id_mode_from_string("logprobs") == TokenIdMode::logprobs);
  CHECK(token_id_mode_from_string("off") == TokenIdMode::off);
  CHECK_FALSE(token_id_mode_from_string("ids").has_value());
}

TEST_CASE("Every token id mode's name parses back to that mode") {
  for (const TokenIdMode mode : {TokenIdMode::off, TokenIdMode::vllm, TokenIdMode::llamacpp, TokenIdMode::logprobs}) {
    CHECK(token_id_mode_from_string(to_string(mode)) == mode);
  }
  CHECK(to_string(TokenIdMode::llamacpp) == "llamacpp");
}

TEST_CASE("Adding token id fields appends them and keeps the client's bytes") {
  const std::string body = R"({"model":"m","prompt":"hi","temperature":0.70,"max_tokens":5})";
  const std::string vllm = add_token_id_fields(body, Dialect::openai_completions, TokenIdMode::vllm);
  CHECK(vllm.substr(0, body.size() - 1) == body.substr(0, body.size() - 1));  // 0.70 stays 0.70
  const auto parsed = boost::json::parse(vllm).as_object();
  CHECK(parsed.at("logprobs").as_int64() == 2);
  CHECK(parsed.at("return_tokens_as_token_ids").as_bool());
  CHECK(parsed.at("return_token_ids").as_bool());

  const auto chat = boost::json::parse(add_token_id_fields(R"({"messages":[],"logprobs":false})",
                                                           Dialect::openai_chat, TokenIdMode::logprobs))
                        .as_object();
  CHECK(chat.at("logprobs").as_bool());
  CHECK(chat.at("top_logprobs").as_int64() == 2);
  CHECK_FALSE(chat.contains("return_token_ids"));

  const auto native = boost::json::parse(add_token_id_fields(R"({"prompt":"x","n_probs":5})",
                                                             Dialect::llamacpp_completion, TokenIdMode::llamacpp))
                          .as_object();
  CHECK(native.at("return_tokens").as_bool());
  CHECK(native.at("n_probs").as_int64() == 5);  // the client's larger request is kept

  const auto tgi = boost::json::parse(add_token_id_fields(R"({"inputs":"x","parameters":{}})",
                                                          Dialect::tgi_generate, TokenIdMode::logprobs))
                       .as_object();
  CHECK(tgi.at("details").as_bool());

  const std::string empty = add_token_id_fields("{}", Dialect::openai_completions, TokenIdMode::logprobs);
  CHECK(boost::json::parse(empty).as_object().at("logprobs").as_int64() == 2);
  CHECK(add_token_id_fields(body, Dialect::openai_completions, TokenIdMode::off) == body);
  CHECK(add_token_id_fields("not json", Dialect::openai_chat, TokenIdMode::vllm) == "not json");
  CHECK(add_token_id_fields("[1]", Dialect::openai_chat, TokenIdMode::vllm) == "[1]");
  CHECK(add_token_id_fields(body, Dialect::unknown, TokenIdMode::vllm) == body);
}

// ---------------------------------------------------------------------------------------------
// Fuzz-style: hostile bytes never crash the parser or decoder (run under ASan in CI).

TEST_CASE("Random bytes and mutated samples never crash the SSE parser or the decoders") {
  const std::vector<std::string> samples = {
      read_data("llamacpp/completion-native-stream.sse"), read_data("llamacpp/v1-completions-stream-logprobs.sse"),
      read_data("llamacpp/v1-chat-completions-stream.sse"), read_data("vllm/completions-stream-token-ids.sse"),
      read_data("vllm/chat-stream-token-ids.sse"), read_data("tgi/generate-stream.sse"),
      read_data("openai/chat-stream-logprobs.sse"), read_data("llamacpp/completion-native-nonstream.json"),
      read_data("tgi/generate.json"), read_data("vllm/completions-nonstream-token-id-strings.json")};
  const Dialect dialects[] = {Dialect::unknown, Dialect::openai_completions, Dialect::openai_chat,
                              Dialect::llamacpp_completion, Dialect::tgi_generate};
  std::mt19937_64 random(20261129);  // fixed seed: a failure reproduces
  const std::string interesting = "{}[]\":,0-1e.\\u\r\n \xff\xef\xbb\xbf" "data:event:[DONE]";
  for (int round = 0; round < 600; ++round) {
    std::string input;
    if (round % 5 == 0) {
      input.resize(random() % 512);
      for (char& c : input) c = static_cast<char>(random());
    } else {
      input = samples[random() % samples.size()];
      const int mutations = 1 + static_cast<int>(random() % 8);
      for (int m = 0; m < mutations && !input.empty(); ++m) {
        const std::size_t at = random() % input.size();
        switch (random() % 4) {
          case 0: input[at] = interesting[random() % interesting.size()]; break;
          case 1: input.erase(at, random() % 16); break;
          case 2: input.insert(at, 1, interesting[random() % interesting.size()]); break;
          case 3: input.insert(at, input.substr(random() % input.size(), random() % 64)); break;
        }
      }
    }
    // Random cut points, then every event through a decoder of a random dialect.
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0; !input.empty() && cuts.size() < 8;) {
      at += 1 + random() % (input.size() / 4 + 1);
      if (at >= input.size()) break;
      cuts.push_back(at);
    }
    std::string partial;
    const auto events = parse_in_pieces(input, cuts, &partial);
    REQUIRE(concatenated_raws(events) + partial == input);
    ResponseDecoder decoder(dialects[random() % std::size(dialects)]);
    for (const auto& event : events) decoder.on_event(event.data, 1);
    Exchange streamed;
    decoder.finish(streamed);
    ResponseDecoder body_decoder(dialects[random() % std::size(dialects)]);
    body_decoder.on_body(input, 2);
    Exchange whole;
    body_decoder.finish(whole);
    for (const Choice& choice : streamed.choices) CHECK(choice.index < 4096);
  }
}

TEST_CASE("replay streams completions and chat with include_usage unless told not to") {
  namespace json = boost::json;
  const auto on = json::parse(set_streaming(R"({"model":"m","prompt":"x"})", Dialect::openai_completions, true));
  CHECK(on.at("stream").as_bool());
  CHECK(on.at("stream_options").at("include_usage").as_bool());
  CHECK(on.as_object().begin()->key() == "model");  // key order kept
  const std::string done = R"({"messages":[],"stream":true,"stream_options":{"include_usage":true}})";
  CHECK(set_streaming(done, Dialect::openai_chat, true) == done);  // already as wanted: bytes kept
  const auto merged = json::parse(set_streaming(R"({"messages":[],"stream_options":{"continuous_usage_stats":true}})",
                                                Dialect::openai_chat, true));
  CHECK(merged.at("stream_options").at("continuous_usage_stats").as_bool());
  CHECK(merged.at("stream_options").at("include_usage").as_bool());
  const auto off = json::parse(set_streaming(done, Dialect::openai_chat, false));
  CHECK_FALSE(off.at("stream").as_bool());
  CHECK_FALSE(off.as_object().contains("stream_options"));
  const std::string plain = R"({"prompt":"x"})";
  CHECK(set_streaming(plain, Dialect::openai_completions, false) == plain);
  CHECK(set_streaming(plain, Dialect::tgi_generate, true) == plain);
  CHECK(set_streaming("not json", Dialect::openai_chat, true) == "not json");
}

TEST_CASE("inference requests are told apart from listings and scrapes") {
  CHECK(is_inference_request("/v1/chat/completions", "{}"));
  CHECK(is_inference_request("/v1/completions?x=1", "{}"));
  CHECK(is_inference_request("/v1/embeddings", "{}"));
  CHECK(is_inference_request("/generate", R"({"text":"x"})"));
  CHECK_FALSE(is_inference_request("/v1/models", ""));
  CHECK_FALSE(is_inference_request("/metrics", ""));
  CHECK_FALSE(is_inference_request("/health", ""));
  CHECK_FALSE(is_inference_request("/", ""));
}

TEST_CASE("A reset decoder decodes every sample as a new decoder does in every dialect") {
  // Half-decoded and finished responses alike are left behind in `reused` before each reset: a
  // field reset() forgot (notes, sniffed dialect, the end marker, usage) would show in the next.
  const char* streams[] = {"llamacpp/completion-native-stream.sse", "llamacpp/v1-chat-completions-stream.sse",
                           "llamacpp/v1-completions-stream-logprobs.sse", "openai/chat-stream-logprobs.sse",
                           "sim/completions-stream-logprobs.sse", "tgi/generate-stream.sse",
                           "vllm/chat-stream-token-ids.sse", "vllm/completions-stream-n2.sse"};
  const char* bodies[] = {"llamacpp/completion-native-nonstream.json", "llamacpp/v1-chat-completions-nonstream.json",
                          "llamacpp/v1-completions-nonstream-logprobs.json", "openai/chat-nonstream-logprobs.json",
                          "tgi/generate.json", "vllm/completions-nonstream-logprobs.json",
                          "vllm/completions-nonstream-token-ids.json", "not json {"};
  const Dialect dialects[] = {Dialect::unknown, Dialect::openai_completions, Dialect::openai_chat,
                              Dialect::llamacpp_completion, Dialect::tgi_generate};
  ResponseDecoder reused(Dialect::unknown);
  std::size_t round = 0;
  auto decode = [](ResponseDecoder& decoder, const std::string& name, bool stream, bool finish) {
    Exchange out;
    if (stream) {
      std::int64_t offset = 0;
      SseParser parser;
      parser.feed(read_data(name), [&](const SseEvent& event) { decoder.on_event(event.data, offset += 1000); });
    } else {
      decoder.on_body(name.find('/') == std::string::npos ? name : read_data(name), 5000);
    }
    if (finish) decoder.finish(out);
    return out;
  };
  for (Dialect dialect : dialects) {
    for (bool stream : {true, false}) {
      for (std::string name : stream ? std::vector<std::string>(std::begin(streams), std::end(streams))
                                     : std::vector<std::string>(std::begin(bodies), std::end(bodies))) {
        INFO(name << " as " << to_string(dialect));
        ResponseDecoder fresh(dialect);
        auto expected = decode(fresh, name, stream, true);
        reused.reset(dialect);
        auto got = decode(reused, name, stream, true);
        CHECK(got == expected);
        CHECK(reused.finished() == fresh.finished());
        CHECK(reused.fast_path_events() == fresh.fast_path_events());
        // Leave something behind for the next reset: a response decoded but not finished.
        reused.reset(Dialect::unknown);
        decode(reused, name, stream, ++round % 2 == 0);
      }
    }
  }
}
