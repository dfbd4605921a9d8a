// The one definition of an exchange's "output tokens", shared by inspect, stats, cat and sweep:
// the server's own count (usage.completion_tokens) when it sent usage, else the tokens decoded
// from its choices (every part: reasoning counts, as servers count it). Servers coalesce tokens into one event and some send no usage, so the two can
// differ; every output says which one it used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "format/trace.hpp"

namespace retrace {

struct OutputTokens {
  std::int64_t count = 0;
  bool from_usage = false;  // false: counted from the decoded choices
};

inline OutputTokens output_tokens(const Exchange& exchange) {
  if (exchange.usage.completion_tokens >= 0) return {exchange.usage.completion_tokens, true};
  std::int64_t counted = 0;
  for (const auto& choice : exchange.choices) counted += static_cast<std::int64_t>(choice.tokens.size());
  return {counted, false};
}

// Of them, the reasoning part's (trace.hpp): usage.reasoning_tokens when the server said, else the
// reasoning tokens decoded; nullopt when the exchange has no reasoning at all.
inline std::optional<OutputTokens> reasoning_tokens(const Exchange& exchange) {
  if (exchange.usage.reasoning_tokens > 0) return OutputTokens{exchange.usage.reasoning_tokens, true};
  std::int64_t counted = 0;
  bool any = false;
  for (const auto& choice : exchange.choices) {
    if (choice.part != Part::reasoning) continue;
    any = true;
    counted += static_cast<std::int64_t>(choice.tokens.size());
  }
  if (!any || (counted == 0 && exchange.usage.reasoning_tokens == 0)) return std::nullopt;
  return OutputTokens{counted, false};
}

// How a total was obtained, for the outputs: "server usage", "counted" or "server usage for N of M".
struct OutputTokenTally {
  std::uint64_t total = 0;
  std::uint64_t exchanges = 0, from_usage = 0;
  void add(const OutputTokens& tokens) {
    total += static_cast<std::uint64_t>(tokens.count > 0 ? tokens.count : 0);
    ++exchanges;
    if (tokens.from_usage) ++from_usage;
  }
  std::string source() const {
    if (exchanges == 0 || from_usage == 0) return "counted";
    if (from_usage == exchanges) return "server usage";
    return "server usage for " + std::to_string(from_usage) + " of " + std::to_string(exchanges) +
           ", counted for the rest";
  }
};

}  // namespace retrace
