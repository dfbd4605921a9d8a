// The part decoder (llm/decoder_impl.hpp, kMaxParts and part_of) on answers built from counts and
// indexes: each 5 bytes of input are one step, a shape (chat tool call delta, chat choice,
// Responses output item, Messages content block, embeddings list, whole Messages tool_use list),
// an index (16 bits, so past the bound of 4,096 too, and absent) and a count (16 bits: that many
// parts in one step). Whatever the steps, a response holds at most 4,096 parts, each tool call id
// once, and the SAX fast path decodes as the DOM path does; every lookup is O(1), so the time per
// input stays linear in its size (libFuzzer's -timeout catches a quadratic one).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"

namespace {
using retrace::llm::Dialect;
using retrace::llm::ResponseDecoder;

constexpr std::size_t kMaxParts = 4096;

struct Step {
  std::uint8_t shape;
  std::uint16_t index;
  std::uint16_t count;
};

std::string index_field(const Step& step) {
  // Index 0xffff: no "index" at all (the next position); else the index as given.
  return step.index == 0xffff ? std::string() : "\"index\":" + std::to_string(step.index) + ",";
}

// One step as the events (streamed) or body (whole) of its dialect.
std::vector<std::string> events_of(Dialect dialect, const Step& step) {
  std::vector<std::string> events;
  const std::size_t count = step.count % 2048;  // at most 2,047 parts a step keeps inputs small
  const std::string index = std::to_string(step.index);
  switch (dialect) {
    case Dialect::openai_chat:
      for (std::size_t i = 0; i < count; ++i)
        events.push_back(R"({"choices":[{)" + index_field(step) + R"("delta":{"tool_calls":[{"index":)" +
                         std::to_string((step.index + i) % 65536) + R"(,"id":"c)" + std::to_string(i % 7) +
                         R"(","function":{"name":"f","arguments":"x"}}]}}]})");
      break;
    case Dialect::openai_completions:
      for (std::size_t i = 0; i < count; ++i)
        events.push_back(R"({"choices":[{"index":)" + std::to_string((step.index + i) % 65536) + R"(,"text":"t"}]})");
      break;
    case Dialect::openai_responses:
      for (std::size_t i = 0; i < count; ++i)
        events.push_back(R"({"type":"response.output_item.added","output_index":)" +
                         std::to_string((step.index + i) % 65536) +
                         R"(,"item":{"type":"function_call","call_id":"k","name":"f"}})");
      break;
    case Dialect::anthropic_messages: {
      if (step.shape & 1) {  // a whole message of `count` tool_use blocks
        std::string body = R"({"type":"message","stop_reason":"tool_use","content":[)";
        for (std::size_t i = 0; i < count; ++i) body += std::string(i ? "," : "") + R"({"type":"tool_use","id":"t","name":"f","input":{}})";
        events.push_back(body + "]}");
        break;
      }
      for (std::size_t i = 0; i < count; ++i)
        events.push_back(R"({"type":"content_block_start","index":)" + std::to_string((step.index + i) % 65536) +
                         R"(,"content_block":{"type":"tool_use","id":"t","name":"f"}})");
      break;
    }
    case Dialect::openai_embeddings: {
      std::string body = R"({"object":"list","data":[)";
      for (std::size_t i = 0; i < count; ++i)
        body += std::string(i ? "," : "") + "{" + index_field(step) + R"("embedding":[1])" + "}";
      events.push_back(body + "]}");
      break;
    }
    default: break;
  }
  return events;
}

retrace::Exchange decode(Dialect dialect, bool fast, const std::vector<Step>& steps, std::size_t& ids) {
  ResponseDecoder decoder(dialect, fast);
  std::int64_t offset = 0;
  const bool whole = dialect == Dialect::openai_embeddings;
  for (const Step& step : steps) {
    for (const std::string& event : events_of(dialect, step)) {
      if (whole || (dialect == Dialect::anthropic_messages && (step.shape & 1))) {
        ResponseDecoder body_decoder(dialect, fast);
        body_decoder.on_body(event, offset += 1000);
        retrace::Exchange one;
        body_decoder.finish(one);
        if (one.choices.size() > kMaxParts) std::abort();
      } else {
        decoder.on_event(event, offset += 1000);
      }
    }
  }
  ids = decoder.tool_call_ids().size();
  retrace::Exchange out;
  out.response.status = 200;
  out.response.streamed = true;
  decoder.finish(out);
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const Dialect dialects[] = {Dialect::openai_chat, Dialect::openai_completions, Dialect::openai_responses,
                              Dialect::anthropic_messages, Dialect::openai_embeddings};
  const Dialect dialect = dialects[data[0] % (sizeof dialects / sizeof dialects[0])];
  std::vector<Step> steps;
  for (std::size_t at = 1; at + 5 <= size && steps.size() < 64; at += 5)
    steps.push_back({data[at], static_cast<std::uint16_t>(data[at + 1] | data[at + 2] << 8),
                     static_cast<std::uint16_t>(data[at + 3] | data[at + 4] << 8)});
  std::size_t fast_ids = 0, dom_ids = 0;
  const retrace::Exchange fast = decode(dialect, true, steps, fast_ids);
  const retrace::Exchange dom = decode(dialect, false, steps, dom_ids);
  for (const retrace::Exchange* exchange : {&fast, &dom}) {
    if (exchange->choices.size() > kMaxParts) std::abort();
    std::set<std::tuple<std::uint32_t, int, std::uint32_t>> seen;
    for (const auto& choice : exchange->choices)
      if (!seen.insert({choice.index, static_cast<int>(choice.part), choice.tool_call}).second) std::abort();  // one part, one stream
  }
  if (fast_ids > kMaxParts || fast_ids != dom_ids) std::abort();
  if (!(fast.choices == dom.choices) || fast.decode_note != dom.decode_note) std::abort();
  return 0;
}
