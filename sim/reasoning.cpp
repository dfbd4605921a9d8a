// The reasoning part of `retrace serve --reasoning N` (sim/reasoning.hpp).
#include "sim/reasoning.hpp"

#include <algorithm>

#include "sim/json_out.hpp"

namespace retrace::sim {

ReasoningSplit ReasoningBoundary::split(const Generation& generation, const Tokenizer& tokenizer,
                                        std::string_view piece, std::size_t at) {
  if (!end_ && (generation.tokens().size() >= tokens_ || generation.finished())) {
    std::size_t end = 0;
    const auto& tokens = generation.tokens();
    for (std::size_t i = 0; i < std::min(tokens_, tokens.size()); ++i) end += tokenizer.token_bytes(tokens[i]).size();
    const std::string_view text = generation.text();
    end = std::min(end, text.size());
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    end_ = end;
  }
  if (!end_) return {piece, {}};
  const std::size_t cut = std::clamp(*end_, at, at + piece.size()) - at;
  return {piece.substr(0, cut), piece.substr(cut)};
}

void put_chat_message(std::string& out, std::string_view text, ReasoningSplit split, bool with_reasoning) {
  out += "{\"role\":\"assistant\",";
  if (with_reasoning) {
    out += "\"reasoning_content\":";
    put_string(out, split.reasoning);
    out += ",\"content\":";
    put_string(out, split.content);
  } else {
    out += "\"content\":";
    put_string(out, text);
  }
  out += '}';
}

}  // namespace retrace::sim
