// Tests for the decoder itself whatever the server: bad data, stored streams decoded again,
// feed_sse, reuse after reset, and hostile bytes (run under ASan in CI).
#include <catch2/catch.hpp>

#include <random>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

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
  Events events;
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
  Events events;
  feed_sse(parser, "data: [DONE]\n\n: ping\n\ndata: {\"choices\":[]}\n\n", 1, &decoder, &events);
  REQUIRE(events.size() == 3);
  Exchange exchange;
  decoder.finish(exchange);
  CHECK(exchange.decode_note.find("event 2: data after the end of the stream") != std::string::npos);
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
