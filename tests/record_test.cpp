#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "llm/llm.hpp"
#include "record/record.hpp"
#include "record/settings.hpp"
#include "tests/encoders.hpp"

using namespace retrace;
using namespace retrace::record;

namespace {

std::string chat_event(const std::string& text) {
  return "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
         "\"delta\":{\"content\":\"" +
         text + "\"},\"finish_reason\":null}]}\n\n";
}

// A captured streamed chat exchange whose body arrived in the given pieces.
CapturedExchange captured_stream(const std::vector<std::string>& pieces) {
  CapturedExchange captured;
  captured.exchange.request.method = "POST";
  captured.exchange.request.target = "/v1/chat/completions";
  captured.exchange.request.body = R"({"model":"m","stream":true,"messages":[]})";
  captured.exchange.request.headers = {{"Authorization", "Bearer sk-secret"},
                                       {"Content-Type", "application/json"}};
  captured.exchange.response.status = 200;
  captured.exchange.response.headers = {{"Content-Type", "text/event-stream"},
                                        {"Set-Cookie", "s=1"}};
  captured.event_stream = true;
  std::int64_t offset = 1000;
  for (const auto& piece : pieces) {
    captured.body.append(piece, offset);
    offset += 1000;
  }
  return captured;
}

std::string joined_events(const Exchange& exchange) {
  std::string body;
  for (const auto& event : exchange.response.events) body += event.data;
  return body;
}

}  // namespace

TEST_CASE("secret headers are redacted by default - whatever their case", "[record][redact]") {
  Redactor redactor(false, {"X-Team-Id"});
  CHECK(redactor.redacts("authorization"));
  CHECK(redactor.redacts("COOKIE"));
  CHECK(redactor.redacts("Set-Cookie"));
  CHECK(redactor.redacts("x-api-key"));
  CHECK(redactor.redacts("Api-Key"));
  CHECK(redactor.redacts("Proxy-Authorization"));
  CHECK(redactor.redacts("x-team-id"));  // the user's own name
  CHECK_FALSE(Redactor(false, {}).redacts("X-Team-Id"));
  CHECK_FALSE(redactor.redacts("Content-Type"));
  std::vector<HttpHeader> headers = {{"Authorization", "Bearer sk-1"}, {"Accept", "*/*"}};
  redactor.apply(headers);
  CHECK(headers[0].value == kRedacted);
  CHECK(headers[1].value == "*/*");
}

TEST_CASE("with --keep-secrets every header is recorded verbatim", "[record][redact]") {
  Redactor redactor(true, {"X-Custom-Secret"});
  std::vector<HttpHeader> headers = {{"Authorization", "Bearer sk-1"}};
  redactor.apply(headers);
  CHECK(headers[0].value == "Bearer sk-1");
}

TEST_CASE("path globs select what is recorded and the query is ignored", "[record][filter]") {
  CHECK(path_selected("/v1/chat/completions", {}, {}));
  CHECK(path_selected("/v1/chat/completions?x=1", {"/v1/*"}, {}));
  CHECK_FALSE(path_selected("/health", {"/v1/*"}, {}));
  CHECK_FALSE(path_selected("/v1/models", {"/v1/*"}, {"/v1/models"}));
  CHECK_FALSE(path_selected("/metrics", {}, {"/metrics", "/health"}));
  CHECK(path_selected("/v1/completions", {}, {"/metrics"}));
}

TEST_CASE("a stream split anywhere is stored as whole SSE events that add up to the body",
          "[record][finish]") {
  std::string body = chat_event("Hel") + chat_event("lo") + "data: [DONE]\n\n";
  // Pieces cut through the middle of events and lines, as TCP may deliver them.
  std::size_t second_cut = chat_event("Hel").size() + 5;  // inside the second event
  std::vector<std::string> pieces = {body.substr(0, 7), body.substr(7, second_cut - 7),
                                     body.substr(second_cut)};
  Exchange out;
  finish_exchange(captured_stream(pieces), Redactor(false, {}), 42, out);
  CHECK(out.id == 42);
  CHECK(out.response.streamed);
  CHECK(joined_events(out) == body);
  REQUIRE(out.response.events.size() == 3);
  CHECK(out.response.events[0].data == chat_event("Hel"));
  // An event is stamped with the arrival of the piece that completed it.
  CHECK(out.response.events[0].offset_ns == 2000);
  CHECK(out.response.events[2].offset_ns == 3000);
  REQUIRE(out.choices.size() == 1);
  CHECK(llm::choice_text(out.choices[0]) == "Hello");
  CHECK(out.dialect == "openai_chat");
  CHECK(out.key == request_key(out.request.method, out.request.target, out.request.body));
}

TEST_CASE("a stream cut mid-event keeps the partial bytes and the tokens before the cut",
          "[record][finish]") {
  std::string body = chat_event("Hel") + chat_event("lo").substr(0, 20);
  auto captured = captured_stream({body});
  captured.exchange.error = {ErrorKind::reset, "upstream reset"};
  captured.exchange.decode_note = "response ended early";
  Exchange out;
  finish_exchange(std::move(captured), Redactor(false, {}), 0, out);
  CHECK(joined_events(out) == body);
  REQUIRE(out.response.events.size() == 2);
  REQUIRE(out.choices.size() == 1);
  CHECK(llm::choice_text(out.choices[0]) == "Hel");
  CHECK(out.error.kind == ErrorKind::reset);
  CHECK_THAT(out.decode_note, Catch::StartsWith("response ended early"));
}

TEST_CASE("finished exchanges carry redacted request and response headers", "[record][finish]") {
  Exchange out;
  finish_exchange(captured_stream({"data: [DONE]\n\n"}), Redactor(false, {}), 0, out);
  CHECK(out.request.headers[0].value == kRedacted);
  CHECK(out.request.headers[1].value == "application/json");
  CHECK(out.response.headers[1].value == kRedacted);
}

TEST_CASE("finished exchanges keep no secret query parameter or body field and are keyed as stored", "[record][finish]") {
  auto captured = captured_stream({"data: [DONE]\n\n"});
  captured.exchange.request.target = "/v1/chat/completions?api-key=sk-query&x=1";
  captured.exchange.request.body = R"({"model":"m","api_key":"sk-body","messages":[]})";
  Exchange out;
  finish_exchange(std::move(captured), Redactor(false, {}), 0, out);
  CHECK(out.request.target == "/v1/chat/completions?api-key=[redacted]&x=1");
  CHECK(out.request.body.find("sk-body") == std::string::npos);
  CHECK(out.request.body.find("\"api_key\":\"[redacted]\"") != std::string::npos);
  // A replay sends what is stored, so the key is the stored request's.
  CHECK(out.key == request_key(out.request.method, out.request.target, out.request.body));

  auto kept = captured_stream({"data: [DONE]\n\n"});
  kept.exchange.request.target = "/v1/chat/completions?api-key=sk-query";
  finish_exchange(std::move(kept), Redactor(true, {}), 0, out);
  CHECK(out.request.target == "/v1/chat/completions?api-key=sk-query");
}

TEST_CASE("a non-streamed body is stored whole and decoded", "[record][finish]") {
  CapturedExchange captured;
  captured.exchange.request.method = "POST";
  captured.exchange.request.target = "/v1/completions";
  captured.exchange.request.body = R"({"model":"m","prompt":"x"})";
  captured.exchange.response.status = 200;
  captured.body.append(R"({"id":"c","object":"text_completion","choices":[{"index":0,"text":"Hi there","finish_reason":"stop"}]})",
                       500);
  Exchange out;
  finish_exchange(std::move(captured), Redactor(false, {}), 0, out);
  CHECK_FALSE(out.response.streamed);
  CHECK(out.response.events.empty());
  CHECK(out.response.body.find("Hi there") != std::string::npos);
  REQUIRE(out.choices.size() == 1);
  CHECK(llm::choice_text(out.choices[0]) == "Hi there");
  CHECK(out.choices[0].finish_reason == "stop");
}

TEST_CASE("a gzip stream is stored decoded and each event keeps the arrival of the coded bytes that completed it",
          "[record][finish][coding]") {
  std::vector<std::string> plain = {chat_event("Hel"), chat_event("lo"), "data: [DONE]\n\n"};
  // Flushed per event, as nginx's gzip filter does for a proxied stream; the last piece also
  // carries the gzip trailer.
  auto coded = test::zlib_encode_pieces(plain, 15 + 16);
  auto captured = captured_stream(coded);
  captured.exchange.response.headers.push_back({"Content-Encoding", "gzip"});
  captured.content_encoding = "gzip";
  Exchange out;
  finish_exchange(std::move(captured), Redactor(false, {}), 0, out);
  CHECK(out.decode_note == "");
  CHECK(joined_events(out) == plain[0] + plain[1] + plain[2]);
  REQUIRE(out.response.events.size() == 3);
  CHECK(out.response.events[0].offset_ns == 1000);
  CHECK(out.response.events[1].offset_ns == 2000);
  CHECK(out.response.events[2].offset_ns == 3000);
  REQUIRE(out.choices.size() == 1);
  CHECK(llm::choice_text(out.choices[0]) == "Hello");
  CHECK(out.choices[0].tokens[0].offset_ns == 1000);
  // The headers still say what the wire carried.
  CHECK(out.response.headers.back() == HttpHeader{"Content-Encoding", "gzip"});
}

TEST_CASE("a corrupt gzip stream keeps the bytes as received and the tokens decoded before the damage",
          "[record][finish][coding]") {
  auto coded = test::zlib_encode_pieces({chat_event("Hel"), chat_event("lo"), "data: [DONE]\n\n"}, 15 + 16);
  coded[1] = "this is not deflate data at all";
  auto captured = captured_stream(coded);
  captured.content_encoding = "gzip";
  Exchange out;
  finish_exchange(std::move(captured), Redactor(false, {}), 0, out);
  REQUIRE(out.response.events.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(out.response.events[i].data == coded[i]);
    CHECK(out.response.events[i].offset_ns == static_cast<std::int64_t>(1000 * (i + 1)));
  }
  CHECK_THAT(out.decode_note, Catch::StartsWith("Content-Encoding gzip: corrupt gzip data at byte"));
  CHECK_THAT(out.decode_note, Catch::Contains("the stored body is the bytes as received, not decoded"));
  REQUIRE(out.choices.size() == 1);
  CHECK(llm::choice_text(out.choices[0]) == "Hel");
}

TEST_CASE("a non-streamed br body is stored decoded and an unknown coding is stored as received",
          "[record][finish][coding]") {
  std::string json = R"({"id":"c","object":"text_completion","choices":[{"index":0,"text":"Hi there","finish_reason":"stop"}]})";
  auto captured_with = [&](std::string coding, std::string body) {
    CapturedExchange captured;
    captured.exchange.request.method = "POST";
    captured.exchange.request.target = "/v1/completions";
    captured.exchange.request.body = R"({"model":"m","prompt":"x"})";
    captured.exchange.response.status = 200;
    captured.content_encoding = std::move(coding);
    captured.body.append(body, 500);
    return captured;
  };
  Exchange out;
  finish_exchange(captured_with("br", test::brotli(json)), Redactor(false, {}), 0, out);
  CHECK(out.response.body == json);
  CHECK(out.decode_note == "");
  REQUIRE(out.choices.size() == 1);
  CHECK(llm::choice_text(out.choices[0]) == "Hi there");

  finish_exchange(captured_with("compress", "\x1f\x9d\x90 coded"), Redactor(false, {}), 0, out);
  CHECK(out.response.body == "\x1f\x9d\x90 coded");
  CHECK(out.choices.empty());
  CHECK_THAT(out.decode_note, Catch::StartsWith("Content-Encoding compress: retrace cannot decode 'compress'"));
}

TEST_CASE("the settings JSON names the upstream and what is redacted", "[record][settings]") {
  RecordOptions options;
  options.upstream = net::parse_url("http://127.0.0.1:9000");
  options.redact_headers = {"X-Team-Token"};
  auto settings = boost::json::parse(settings_json(options)).as_object();
  CHECK(settings.at("upstream").as_string() == "http://127.0.0.1:9000");
  auto& redacted = settings.at("redacted_headers").as_array();
  CHECK(redacted.size() == secret_header_names().size() + 1);
  options.keep_secrets = true;
  auto kept = boost::json::parse(settings_json(options)).as_object();
  CHECK(kept.at("redacted_headers").as_array().empty());
  CHECK(kept.at("keep_secrets").as_bool());
}

TEST_CASE("the settings JSON reads back into the typed settings it was written from", "[record][settings]") {
  RecordOptions options;
  options.upstream = net::parse_url("http://127.0.0.1:9000");
  options.include_paths = {"/v1/*"};
  options.sample = 0.25;
  options.seed = 7;
  options.upstream_timeout = std::chrono::milliseconds(1500);
  options.writer.derive_tokens = true;  // --derive-tokens
  auto written = record_settings(options);
  auto read = parse_record_settings(settings_json(options));
  CHECK(read.command == "record");
  CHECK(read.upstream == "http://127.0.0.1:9000");
  CHECK(read.include_paths == std::vector<std::string>{"/v1/*"});
  CHECK(read.sample == 0.25);
  CHECK(read.seed == 7);
  CHECK(read.upstream_timeout_ms == 1500);
  CHECK(read.derive_tokens);
  CHECK_FALSE(parse_record_settings(settings_json(RecordOptions{})).derive_tokens);
  CHECK(read.redacted_headers == written.redacted_headers);
  CHECK(read.max_response_bytes == written.max_response_bytes);
  // Every key of the struct, and no other, in the JSON (nobody writes one by hand).
  auto object = boost::json::parse(settings_json(options)).as_object();
  CHECK(object.size() == boost::mp11::mp_size<boost::describe::describe_members<
                             RecordSettings, boost::describe::mod_public>>::value);
}

TEST_CASE("a stream of tiny events counts their bookkeeping against the decode limit and is kept as received",
          "[record][finish][coding]") {
  // 600 KB of comments that decode to 200,000 events: about 8 MB of Event bookkeeping, past a
  // 1 MiB limit the decoded bytes alone stay under.
  std::string comments;
  for (int i = 0; i < 200000; ++i) comments += ":\n\n";
  auto coded = test::zlib_encode_pieces({chat_event("Hel"), comments, "data: [DONE]\n\n"}, 15 + 16);
  auto captured = captured_stream(coded);
  captured.content_encoding = "gzip";
  Exchange out;
  finish_exchange(std::move(captured), Redactor(false, {}), 0, out, 1u << 20);
  REQUIRE(out.response.events.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(out.response.events[i].data == coded[i]);
  CHECK_THAT(out.decode_note, Catch::Contains("the event stream decodes to more than 1048576 bytes"));
  REQUIRE(out.choices.size() == 1);
  CHECK(llm::choice_text(out.choices[0]) == "Hel");
}
