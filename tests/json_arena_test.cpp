// The one arena rule (base/json_arena.hpp) where it is used: readers and decoders reused over
// thousands of bodies of growing size, far past their scratch buffers, as replay reuses them.
// Each of these ran out of memory (bad_alloc) after a few dozen large bodies while the arena was
// reset with monotonic_resource::release(), which keeps the doubled next-block size.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include <boost/json/parse.hpp>

#include "format/trace.hpp"
#include "base/json_arena.hpp"
#include "llm/llm.hpp"
#include "replay/preflight.hpp"

namespace {

using namespace retrace;

constexpr int kBodies = 2000;
// Body i holds about 64 + 128·i bytes of content: 64 B to 256 KB, sixteen times the decoder's
// 16 KB scratch and sixty times the preflight's 4 KB.
std::size_t content_bytes(int i) { return 64 + 128 * static_cast<std::size_t>(i); }

// Deterministic printable content of exactly `n` bytes, different for each body.
std::string content_of(int i, std::size_t n) {
  std::string text;
  text.reserve(n);
  for (std::size_t k = 0; text.size() < n; ++k) text += static_cast<char>('a' + (k * 7 + i) % 26);
  return text;
}

// A non-streamed chat answer as vLLM sends it with return_token_ids: the prompt's ids ride along,
// so the body is far larger than its answer.
std::string chat_answer(const std::string& content, std::size_t prompt_ids) {
  std::string ids;
  for (std::size_t k = 0; k < prompt_ids; ++k) ids += (k ? "," : "") + std::to_string(1000 + k % 30000);
  return R"({"id":"chatcmpl-1","object":"chat.completion","model":"m","prompt_token_ids":[)" + ids +
         R"(],"choices":[{"index":0,"message":{"role":"assistant","content":")" + content +
         R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":)" + std::to_string(prompt_ids) +
         R"(,"completion_tokens":7,"total_tokens":)" + std::to_string(prompt_ids + 7) + "}}";
}

std::string joined_bytes(const Choice& choice) {
  std::string text;
  for (const Token& token : choice.tokens) text += token.bytes;
  return text;
}

}  // namespace

TEST_CASE("one reused decoder decodes thousands of non-streamed answers of growing size") {
  // Both paths: the SAX fast path (its one reused parser; whole answers take it) and the general
  // (DOM) path, the one that parses into the arena.
  for (const bool fast : {true, false}) {
    INFO((fast ? "fast path" : "general path"));
    llm::ResponseDecoder decoder(llm::Dialect::openai_chat, fast);
    for (int i = 0; i < kBodies; ++i) {
      const std::string content = content_of(i, content_bytes(i) / 2);
      const std::size_t prompt_ids = content_bytes(i) / 12;
      decoder.reset(llm::Dialect::openai_chat);
      decoder.on_body(chat_answer(content, prompt_ids), 1000);
      REQUIRE(decoder.fast_path_events() == (fast ? 1u : 0u));
      Exchange exchange;
      decoder.finish(exchange);
      REQUIRE(exchange.choices.size() == 1);
      REQUIRE(joined_bytes(exchange.choices[0]) == content);
      REQUIRE(exchange.choices[0].finish_reason == "stop");
      REQUIRE(exchange.usage.prompt_tokens == static_cast<std::int64_t>(prompt_ids));
    }
  }
}

TEST_CASE("one reused decoder decodes thousands of stream events of growing size") {
  // The general (DOM) path, the one that parses into the arena: the SAX fast path would take these
  // simple deltas without it.
  llm::ResponseDecoder decoder(llm::Dialect::openai_chat, false);
  decoder.reset(llm::Dialect::openai_chat);
  std::string expected;
  for (int i = 0; i < kBodies; ++i) {
    const std::string delta = content_of(i, content_bytes(i));
    expected += delta;
    decoder.on_event(R"({"choices":[{"index":0,"delta":{"content":")" + delta + R"("}}]})", 1000 + i);
  }
  decoder.on_event("[DONE]", 1000 + kBodies);
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == 1);
  CHECK(joined_bytes(exchange.choices[0]) == expected);
}

TEST_CASE("one reused preflight model reader reads thousands of request bodies of growing size") {
  replay::ModelReader model_of;
  for (int i = 0; i < kBodies; ++i) {
    Exchange exchange;
    exchange.request.method = "POST";
    exchange.request.target = "/v1/chat/completions";
    exchange.request.body = R"({"model":"m)" + std::to_string(i % 3) + R"(","messages":[{"role":"user","content":")" +
                            content_of(i, content_bytes(i)) + R"("}]})";
    const auto model = model_of(exchange);
    REQUIRE(model);
    REQUIRE(*model == "m" + std::to_string(i % 3));
  }
}

TEST_CASE("a JSON arena gives each parse fresh storage over the same scratch") {
  llm::JsonArena arena(256);
  for (int i = 0; i < kBodies; ++i) {
    const std::string text = "[\"" + content_of(i, content_bytes(i)) + "\"]";
    const auto value = boost::json::parse(text, arena.fresh());
    REQUIRE(value.as_array().at(0).as_string().size() == content_bytes(i));
  }
}
