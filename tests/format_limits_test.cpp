// What a trace can hold and what a reader refuses: records past Cap'n Proto's blob limit, requests
// that cannot go on the wire, a zstd frame header that claims more than a frame holds.
#include <catch2/catch.hpp>

#include <fstream>

#include <boost/json.hpp>

#include "format/header.hpp"
#include "format/json.hpp"
#include "format/trace.hpp"
#include "format/wire_syntax.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

Exchange plain_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.headers = {{"content-type", "application/json"}};
  exchange.request.body = R"({"prompt":"q )" + std::to_string(id) + R"("})";
  exchange.response.status = 200;
  exchange.response.body = "{}";
  Choice choice;
  choice.kind = TokenKind::text_deltas;
  choice.tokens = {Token{-1, "ok", false, 0, 10, {}}};
  exchange.choices.push_back(choice);
  return exchange;
}

TraceHeader test_header() {
  return new_trace_header(Source::recorded, "test", "http://127.0.0.1:1", "{}", Clock::system());
}

void write_all(const std::filesystem::path& path, const std::vector<Exchange>& exchanges,
               WriterOptions options = {}) {
  TraceWriter writer(path, test_header(), options);
  for (const auto& exchange : exchanges) writer.write(exchange);
  writer.close();
}

}  // namespace

TEST_CASE("a body past what one record field holds is stored without the bodies and the next exchange whole") {
  TempDir dir;
  auto huge = plain_exchange(1);
  huge.response.body.assign((1u << 29) - 1, 'x');  // one byte past kMaxBlobBytes
  REQUIRE(huge.response.body.size() > kMaxBlobBytes);
  write_all(dir / "t.rtrace", {plain_exchange(0), huge, plain_exchange(2)});
  auto body_bytes = std::to_string(huge.request.body.size() + huge.response.body.size());
  huge.response.body.clear();
  huge.response.body.shrink_to_fit();
  auto trace = load_trace(dir / "t.rtrace");
  REQUIRE(trace.exchanges.size() == 3);
  CHECK(trace.exchanges[0] == plain_exchange(0));
  CHECK(trace.exchanges[2] == plain_exchange(2));
  const auto& kept = trace.exchanges[1];
  CHECK(kept.response.body.empty());
  CHECK(kept.request.body.empty());
  CHECK(kept.response.status == 200);
  CHECK(kept.choices == huge.choices);
  CHECK(kept.decode_note.find("bodies (" + body_bytes + " bytes) not kept") != std::string::npos);
}

TEST_CASE("an exchange too large even without its bodies is stored without its tokens and says so") {
  TempDir dir;
  constexpr std::uint64_t kLimit = 64u << 10;
  auto wordy = plain_exchange(1);
  wordy.choices.front().tokens.assign(4000, Token{-1, std::string(40, 't'), false, 0, 10, {}});
  write_all(dir / "t.rtrace", {plain_exchange(0), wordy, plain_exchange(2)},
            WriterOptions{.max_frame_bytes = kLimit});
  auto trace = load_trace(dir / "t.rtrace", ReaderOptions{.traversal_limit_words = kLimit / 8});
  REQUIRE(trace.exchanges.size() == 3);
  CHECK(trace.exchanges[2] == plain_exchange(2));
  const auto& kept = trace.exchanges[1];
  CHECK(kept.choices.empty());
  CHECK(kept.request.target == "/v1/completions");
  CHECK(kept.decode_note.find("and its 4000 tokens not kept") != std::string::npos);
}

TEST_CASE("the wire syntax refuses CR and LF and other control bytes where a request line or header has none") {
  Request request;
  request.method = "POST";
  request.target = "/v1/chat/completions?x=1";
  request.headers = {{"Content-Type", "application/json"}, {"X-Tab", "a\tb"}, {"X-Latin", "caf\xc3\xa9"}};
  CHECK(wire_syntax_error(request).empty());
  request.method.clear();
  CHECK(wire_syntax_error(request).empty());  // POST, to replay

  auto with = [&](auto change) {
    Request changed = request;
    change(changed);
    return wire_syntax_error(changed);
  };
  CHECK(with([](Request& r) { r.method = "POST /x HTTP/1.1\r\n"; }) ==
        "the method is not an HTTP token (byte 0x20 at byte 4)");
  CHECK(with([](Request& r) { r.target = "/v1/x HTTP/1.1\r\nInjected: yes"; }) ==
        "the target has a space or control byte (0x20 at byte 5)");
  CHECK(with([](Request& r) { r.target = "/v1/x\r\n\r\nPOST"; }) ==
        "the target has a space or control byte (0x0d at byte 5)");
  CHECK(with([](Request& r) { r.headers[1].value = "a\r\nInjected: yes"; }) ==
        "header 2 (X-Tab): its value has a control byte (0x0d at byte 1)");
  CHECK(with([](Request& r) { r.headers[0].name = "X-A\r\nInjected"; }) ==
        "header 1 (X-A??Injected): its name is not an HTTP token (byte 0x0d at byte 3)");
  CHECK(with([](Request& r) { r.headers[0].name = ""; }) ==
        "header 1 (): its name is not an HTTP token (it is empty)");
  CHECK(with([](Request& r) { r.headers[2].value = std::string("a\0b", 3); }) ==
        "header 3 (X-Latin): its value has a control byte (0x00 at byte 1)");
}

TEST_CASE("the reader leaves out a request that cannot go on the wire and reads the rest of its frame") {
  TempDir dir;
  auto bad_value = plain_exchange(1);
  bad_value.request.headers.push_back({"X-A", "a\r\nInjected: yes"});
  auto bad_target = plain_exchange(2);
  bad_target.request.target = "/v1/x HTTP/1.1\r\nInjected: yes";
  auto bad_name = plain_exchange(3);
  bad_name.request.headers.push_back({"X-A\r\nInjected", "yes"});
  write_all(dir / "t.rtrace", {plain_exchange(0), bad_value, bad_target, bad_name, plain_exchange(4)},
            WriterOptions{.flush_every = 100});
  for (bool requests_only : {false, true}) {
    auto trace = requests_only ? load_requests(dir / "t.rtrace") : load_trace(dir / "t.rtrace");
    REQUIRE(trace.exchanges.size() == 2);
    CHECK(trace.exchanges[0].id == 0);
    CHECK(trace.exchanges[1].id == 4);
    CHECK(trace.recovery.skipped_regions == 3);
    CHECK(trace.recovery.skipped_reason ==
          "exchange 1 left out: its request cannot go on the wire: header 2 (X-A): its value has a "
          "control byte (0x0d at byte 1)");
  }
}

TEST_CASE("a zstd frame that declares more content than a frame holds is refused before its buffer grows") {
  TempDir dir;
  auto path = dir / "t.rtrace";
  write_all(path, {plain_exchange(0)}, WriterOptions{.write_index = false});
  // A zstd frame whose header declares 2^40 bytes of content (an 8-byte size field, one segment),
  // then one raw block of 8 bytes.
  std::string frame("\x28\xb5\x2f\xfd\xe0", 5);
  for (int i = 0; i < 8; ++i) frame += static_cast<char>(i == 5 ? 1 : 0);
  frame += std::string("\x41\x00\x00", 3) + std::string(8, '\0');
  std::ofstream(path, std::ios::app | std::ios::binary) << frame;

  TraceReader reader(path);
  Exchange exchange;
  std::size_t read = 0;
  while (reader.next(exchange)) ++read;
  CHECK(read == 1);
  CHECK(describe(reader.recovery()).find("a frame declares 1099511627776 bytes of content") != std::string::npos);
  CHECK(reader.peak_buffer_bytes() < (16u << 20));
}

TEST_CASE("an export line is valid UTF-8 even when a note quotes bytes that are not") {
  auto exchange = plain_exchange(7);
  exchange.decode_note = "not JSON: \"\xff\xfe\xc3\" at byte 3";
  exchange.error = {ErrorKind::protocol, "upstream sent \x80"};
  auto line = exchange_line(exchange);
  boost::json::error_code error;
  auto parsed = boost::json::parse(line, error);
  REQUIRE_FALSE(error);
  Exchange back;
  exchange_from_json(parsed.as_object().at("exchange").as_object(), back);
  CHECK(back.decode_note == "not JSON: \"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\" at byte 3");
  CHECK(back.error.message == "upstream sent \xEF\xBF\xBD");
  CHECK(back.request == exchange.request);
}

TEST_CASE("an export line holds text fields that are not UTF-8 as base64 and reads them back") {
  auto exchange = plain_exchange(9);
  exchange.session_id = "s\xff";
  exchange.request.headers.push_back({"X-Name", "caf\xe9"});
  exchange.labels = {{"tier", "\x80gold"}};
  exchange.dialect = "d\xfe";
  exchange.expected = "\xc3";
  auto line = exchange_line(exchange);
  boost::json::error_code error;
  auto parsed = boost::json::parse(line, error);
  REQUIRE_FALSE(error);
  Exchange back;
  exchange_from_json(parsed.as_object().at("exchange").as_object(), back);
  CHECK(back == exchange);
  TraceHeader header = test_header();
  header.target = "/data/\xff.jsonl";
  header.labels = {{"run", "r\xfe"}};
  auto header_parsed = boost::json::parse(header_line(header), error);
  REQUIRE_FALSE(error);
  CHECK(header_from_json(header_parsed.as_object().at("header").as_object()) == header);
}

TEST_CASE("an imported export line whose request could put a line on the wire is refused") {
  auto exchange = plain_exchange(3);
  auto object = boost::json::parse(exchange_line(exchange)).as_object();
  auto& request = object.at("exchange").as_object().at("request").as_object();
  request["target"] = "/v1/x\r\n\r\nPOST /admin HTTP/1.1";
  Exchange back;
  CHECK_THROWS_WITH(exchange_from_json(object.at("exchange").as_object(), back),
                    Catch::Contains("\"request\" cannot go on the wire: the target has a space or control byte (0x0d at byte 5)"));
}
