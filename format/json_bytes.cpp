// Byte fields of the JSON view: a string when valid UTF-8, else {"base64": "..."} (format/json.hpp).
#include <array>

#include "base/text.hpp"
#include "format/json.hpp"

namespace retrace {

namespace json = boost::json;

namespace {
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    out += kBase64[v & 63];
  }
  if (std::size_t rest = bytes.size() - i) {
    std::uint32_t v = at(i) << 16;
    if (rest == 2) v |= at(i + 1) << 8;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += rest == 2 ? kBase64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::array<int, 256> value;
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[static_cast<unsigned char>(kBase64[k])] = k;
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t accumulator = 0;
  int bits = 0;
  for (char c : text) {
    int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    accumulator = (accumulator << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((accumulator >> bits) & 0xFF);
    }
  }
  return out;
}

json::value bytes_to_json(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return json::string(bytes);
  json::object marker;
  marker["base64"] = base64_encode(bytes);
  return marker;
}

std::string bytes_from_json(const json::value& value, std::string_view field) {
  if (const auto* text = value.if_string()) return std::string(*text);
  if (const auto* object = value.if_object()) {
    if (const auto* encoded = object->if_contains("base64"); encoded && encoded->is_string()) {
      if (auto decoded = base64_decode(encoded->get_string())) return *decoded;
      throw TraceError("field \"" + std::string(field) + "\": invalid base64");
    }
  }
  throw TraceError("field \"" + std::string(field) +
                   "\": expected a string or {\"base64\": ...}");
}

}  // namespace retrace
