// `retrace serve --reasoning N`: the first N tokens a chat choice generates are its reasoning, as
// a reasoning model behind vLLM's --reasoning-parser returns it: streamed as `reasoning_content`
// deltas before the `content` deltas (one event that crosses the boundary carries both), in a
// whole message as `reasoning_content` beside `content`, and counted in usage as
// completion_tokens_details.reasoning_tokens. The boundary is the end of the N-th token's bytes,
// moved forward to the next whole UTF-8 character, so neither part holds half of one.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "sim/engine.hpp"

namespace retrace::sim {

struct ReasoningSplit {
  std::string_view reasoning;
  std::string_view content;
};

class ReasoningBoundary {
 public:
  explicit ReasoningBoundary(std::size_t tokens) : tokens_(tokens) {}
  bool enabled() const { return tokens_ > 0; }
  // `piece` is the generation's text from byte `at` on (the next bytes released): its reasoning
  // and its content. Until the N-th token exists, all of it is reasoning.
  ReasoningSplit split(const Generation& generation, const Tokenizer& tokenizer, std::string_view piece,
                       std::size_t at);
  // The reasoning tokens among `generated` (what usage reports).
  std::size_t reasoning_tokens(std::size_t generated) const { return generated < tokens_ ? generated : tokens_; }

 private:
  std::size_t tokens_;
  std::optional<std::size_t> end_;  // byte offset, once known
};

// {"role":"assistant",["reasoning_content":…,]"content":…} of a whole chat message.
void put_chat_message(std::string& out, std::string_view text, ReasoningSplit split, bool with_reasoning);

}  // namespace retrace::sim
