// request_key (format/request_key.cpp) against the canonical form its first version hashed.
#include <xxhash.h>

#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "format/trace.hpp"

using namespace retrace;

namespace {

// The canonical body as request_key's first version wrote it: a new string from
// boost::json::serialize for every key and scalar. What it prints is what every stored key hashed.
void reference_canonical(const boost::json::value& value, std::string& out) {
  if (value.is_object()) {
    std::vector<const boost::json::key_value_pair*> members;
    for (const auto& member : value.get_object()) members.push_back(&member);
    std::sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->key() < b->key(); });
    out += '{';
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i) out += ',';
      out += boost::json::serialize(boost::json::string_view(members[i]->key()));
      out += ':';
      reference_canonical(members[i]->value(), out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& element : value.get_array()) {
      if (!first) out += ',';
      first = false;
      reference_canonical(element, out);
    }
    out += ']';
  } else {
    out += boost::json::serialize(value);
  }
}

}  // namespace

TEST_CASE("request keys hash the body's canonical form as Boost.JSON prints each key and scalar") {
  std::string long_text(700, 'x');
  long_text += "\"\\\n\t\x01 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  const std::vector<std::string> bodies{
      R"({"model":"m","prompt":"Say hi.","max_tokens":4,"temperature":0})",
      R"({"z":1,"a":{"y":[1,2,{"c":null,"b":true}],"x":false},"m":"\u00e9\u20ac\ud83d\ude00"})",
      R"({"numbers":[0,-0,-0.0,1.5,0.1,1e300,-2.5e-7,18446744073709551615,-9223372036854775808,123456789.125]})",
      R"({"esc\"aped":"q\"uote\\back\/slash\b\f\n\r\t\u0001\u001f","":"empty key","e":{},"a":[]})",
      "{\"long\":\"" + boost::json::serialize(boost::json::string(long_text)).substr(1),
      R"({"long":)" + boost::json::serialize(boost::json::string(long_text)) + R"(,"k)" +
          std::string(300, 'k') + R"(":[)" + boost::json::serialize(boost::json::string(long_text)) + "]}",
      R"([3,1,2])", R"("a string")", "42", "true", "null",
  };
  for (const auto& body : bodies) {
    INFO(body);
    boost::json::error_code error;
    auto parsed = boost::json::parse(body, error);
    std::string hashed = std::string("POST") + '\0' + "/v1/chat/completions" + '\0';
    if (error) {
      hashed += body;  // not JSON (the cut-short one): its bytes
    } else {
      reference_canonical(parsed, hashed);
    }
    XXH128_hash_t expected = XXH3_128bits(hashed.data(), hashed.size());
    auto key = request_key("POST", "/v1/chat/completions", body);
    CHECK(key.hi == expected.high64);
    CHECK(key.lo == expected.low64);
  }
}
