// What a replay worker reuses across its exchanges instead of making anew for each: response
// decoders, and each response header name's secret verdict (replay/worker.hpp).
#include <memory>
#include <string_view>

#include "format/redaction.hpp"
#include "replay/worker.hpp"

namespace retrace::replay {

// A decoder's set-up (its parsers, a 16 KiB arena) is a few large allocations, each of which
// made glibc consolidate its fast bins: one reset decoder per exchange in flight instead.
llm::ResponseDecoder Worker::take_decoder(llm::Dialect dialect) {
  if (free_decoders_.empty()) return llm::ResponseDecoder(dialect);
  auto decoder = std::move(free_decoders_.back());
  free_decoders_.pop_back();
  decoder.reset(dialect);
  return decoder;
}

void Worker::give_decoder(llm::ResponseDecoder decoder) {
  if (free_decoders_.size() < 256) free_decoders_.push_back(std::move(decoder));
}

// A server sends the same few header names on every response: each name's verdict is kept
// (is_secret_header lower-cases and searches several lists per call).
bool Worker::secret_header(std::string_view name) {
  for (const auto& [known, secret] : secret_names_)
    if (known == name) return secret;
  bool secret = is_secret_header(name);
  if (secret_names_.size() < kSecretNamesKept) secret_names_.emplace_back(name, secret);
  return secret;
}

}  // namespace retrace::replay
