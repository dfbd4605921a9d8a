// Enum <-> text: the names the CLI, JSON exports and reports use for trace enums.
#include "format/trace.hpp"

namespace retrace {

std::string_view to_string(Source source) { return enum_name(source); }
std::string_view to_string(TokenKind kind) { return enum_name(kind); }
std::string_view to_string(ErrorKind kind) { return enum_name(kind); }
std::string_view to_string(Part part) { return enum_name(part); }
std::optional<Part> part_from_string(std::string_view name) { return enum_from_name<Part>(name); }

std::optional<TokenKind> token_kind_from_string(std::string_view name) {
  return enum_from_name<TokenKind>(name);
}
std::optional<ErrorKind> error_kind_from_string(std::string_view name) {
  return enum_from_name<ErrorKind>(name);
}
std::optional<Source> source_from_string(std::string_view name) { return enum_from_name<Source>(name); }

const std::string* Exchange::label(std::string_view key) const {
  for (const auto& label : labels)
    if (label.key == key) return &label.value;
  return nullptr;
}

}  // namespace retrace
