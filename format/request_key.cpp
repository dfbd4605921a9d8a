// request_key: the hash that aligns exchanges across traces. Layout of the hashed bytes:
//
//   method 0x00 target 0x00 body
//
// where body is canonical JSON (object keys sorted recursively, no whitespace) when it parses,
// and the raw bytes otherwise. XXH3-128; changing any of this breaks every existing trace's
// alignment.
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <boost/json.hpp>

#include "format/trace.hpp"

namespace retrace {

namespace {

// JSON with object keys sorted recursively and no whitespace; scalars as Boost.JSON prints them.
void write_canonical(const boost::json::value& value, std::string& out) {
  switch (value.kind()) {
    case boost::json::kind::object: {
      const auto& object = value.get_object();
      std::vector<const boost::json::key_value_pair*> members;
      members.reserve(object.size());
      for (const auto& member : object) members.push_back(&member);
      std::sort(members.begin(), members.end(),
                [](auto* a, auto* b) { return a->key() < b->key(); });
      out += '{';
      bool first = true;
      for (const auto* member : members) {
        if (!first) out += ',';
        first = false;
        out += boost::json::serialize(boost::json::string_view(member->key()));
        out += ':';
        write_canonical(member->value(), out);
      }
      out += '}';
      break;
    }
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value.get_array()) {
        if (!first) out += ',';
        first = false;
        write_canonical(element, out);
      }
      out += ']';
      break;
    }
    default:
      out += boost::json::serialize(value);
  }
}

}  // namespace

RequestKey request_key(std::string_view method, std::string_view target, std::string_view body) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  static constexpr char kSeparator = '\0';
  XXH3_128bits_update(&state, method.data(), method.size());
  XXH3_128bits_update(&state, &kSeparator, 1);
  XXH3_128bits_update(&state, target.data(), target.size());
  XXH3_128bits_update(&state, &kSeparator, 1);
  boost::json::error_code error;
  boost::json::value parsed = boost::json::parse(body, error);
  if (!error && !body.empty()) {
    std::string canonical;
    canonical.reserve(body.size());
    write_canonical(parsed, canonical);
    XXH3_128bits_update(&state, canonical.data(), canonical.size());
  } else {
    XXH3_128bits_update(&state, body.data(), body.size());
  }
  XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return RequestKey{hash.high64, hash.low64};
}

std::string RequestKey::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(32, '0');
  for (int i = 0; i < 16; ++i) {
    text[15 - i] = kDigits[(hi >> (4 * i)) & 0xf];
    text[31 - i] = kDigits[(lo >> (4 * i)) & 0xf];
  }
  return text;
}

}  // namespace retrace
