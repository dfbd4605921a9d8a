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

// The text Boost.JSON prints for what `serializer` was reset to, appended to `out`. One serializer
// and a stack buffer serve a whole key: boost::json::serialize would return a new string for every
// object key and scalar (half of a short request's key).
void append_serialized(boost::json::serializer& serializer, std::string& out) {
  char buffer[256];
  while (!serializer.done()) out.append(serializer.read(buffer, sizeof buffer));
}

// JSON with object keys sorted recursively and no whitespace; scalars as Boost.JSON prints them.
void write_canonical(const boost::json::value& value, boost::json::serializer& serializer, std::string& out) {
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
        serializer.reset(member->key());
        append_serialized(serializer, out);
        out += ':';
        write_canonical(member->value(), serializer, out);
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
        write_canonical(element, serializer, out);
      }
      out += ']';
      break;
    }
    default:
      serializer.reset(&value);
      append_serialized(serializer, out);
  }
}

}  // namespace

namespace {

// method 0x00 target 0x00, then the body's bytes as `hash_body` gives them.
template <class HashBody>
RequestKey hash_request(std::string_view method, std::string_view target, HashBody hash_body) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  static constexpr char kSeparator = '\0';
  XXH3_128bits_update(&state, method.data(), method.size());
  XXH3_128bits_update(&state, &kSeparator, 1);
  XXH3_128bits_update(&state, target.data(), target.size());
  XXH3_128bits_update(&state, &kSeparator, 1);
  hash_body(state);
  XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return RequestKey{hash.high64, hash.low64};
}

void hash_canonical(XXH3_state_t& state, const boost::json::value& body, std::size_t size_hint) {
  std::string canonical;
  canonical.reserve(size_hint);
  boost::json::serializer serializer;
  write_canonical(body, serializer, canonical);
  XXH3_128bits_update(&state, canonical.data(), canonical.size());
}

}  // namespace

RequestKey request_key(std::string_view method, std::string_view target, std::string_view body) {
  return hash_request(method, target, [&](XXH3_state_t& state) {
    // The parsed body lives in a stack buffer (and spills to the heap past it): a request's many
    // small nodes are not each allocated and freed.
    unsigned char nodes[4096];
    boost::json::monotonic_resource resource(nodes, sizeof nodes);
    boost::json::error_code error;
    boost::json::value parsed = boost::json::parse(body, error, &resource);
    if (!error && !body.empty()) hash_canonical(state, parsed, body.size());
    else XXH3_128bits_update(&state, body.data(), body.size());
  });
}

RequestKey request_key_of_parsed(std::string_view method, std::string_view target,
                                 const boost::json::value& body) {
  return hash_request(method, target, [&](XXH3_state_t& state) { hash_canonical(state, body, 256); });
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
