// Enum <-> text: the names the CLI, JSON exports and reports use for trace enums.
#include "format/trace.hpp"

namespace retrace {

std::string_view to_string(Source source) {
  switch (source) {
    case Source::recorded: return "recorded";
    case Source::replayed: return "replayed";
    case Source::imported: return "imported";
  }
  return "unknown";
}

std::string_view to_string(TokenKind kind) {
  switch (kind) {
    case TokenKind::none: return "none";
    case TokenKind::text_deltas: return "text_deltas";
    case TokenKind::logprob_tokens: return "logprob_tokens";
    case TokenKind::token_ids: return "token_ids";
  }
  return "unknown";
}

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::none: return "none";
    case ErrorKind::connect: return "connect";
    case ErrorKind::tls: return "tls";
    case ErrorKind::timeout: return "timeout";
    case ErrorKind::reset: return "reset";
    case ErrorKind::http_status: return "http_status";
    case ErrorKind::protocol: return "protocol";
    case ErrorKind::cut: return "cut";
    case ErrorKind::rejected: return "rejected";
  }
  return "unknown";
}

std::optional<TokenKind> token_kind_from_string(std::string_view name) {
  for (auto kind : {TokenKind::none, TokenKind::text_deltas, TokenKind::logprob_tokens,
                    TokenKind::token_ids})
    if (to_string(kind) == name) return kind;
  return std::nullopt;
}

std::optional<ErrorKind> error_kind_from_string(std::string_view name) {
  for (auto kind : {ErrorKind::none, ErrorKind::connect, ErrorKind::tls, ErrorKind::timeout,
                    ErrorKind::reset, ErrorKind::http_status, ErrorKind::protocol, ErrorKind::cut,
                    ErrorKind::rejected})
    if (to_string(kind) == name) return kind;
  return std::nullopt;
}

std::optional<Source> source_from_string(std::string_view name) {
  for (auto source : {Source::recorded, Source::replayed, Source::imported})
    if (to_string(source) == name) return source;
  return std::nullopt;
}

const std::string* Exchange::label(std::string_view key) const {
  for (const auto& label : labels)
    if (label.key == key) return &label.value;
  return nullptr;
}

}  // namespace retrace
