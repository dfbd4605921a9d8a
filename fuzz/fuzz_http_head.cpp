// HTTP request and response heads as record parses them (net/field_bounded_parser.hpp, record's
// header limits: 64 KiB for a request, 256 KiB for a response): any bytes, split between two reads
// where the first byte says, give a message or an error code, never an exception (Beast's fields
// throw std::length_error past 65,533 bytes a field, which once ended record); a field refused as
// too long fails the read with header_limit. Run with -max_len above 65,536 to reach the limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/beast/http.hpp>

#include "net/field_bounded_parser.hpp"

namespace http = boost::beast::http;

namespace {

template <class Parser>
void feed(Parser& parser, std::string_view bytes, std::size_t split) {
  boost::beast::error_code ec;
  std::string pending(bytes.substr(0, split));
  for (int read = 0; read < 2; ++read) {
    std::size_t used = parser.put(boost::asio::buffer(pending.data(), pending.size()), ec);
    pending.erase(0, used);
    if (ec && ec != http::error::need_more) break;
    if (read == 0) pending.append(bytes.substr(split));
  }
  if (!parser.oversized().empty() && ec != http::error::header_limit) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::size_t split = data[0] % (bytes.size() + 1);
  if (data[0] & 1) {
    retrace::net::BoundedRequestParser<http::string_body> parser;
    parser.header_limit(64u << 10);
    parser.body_limit(1u << 20);
    feed(parser, bytes, split);
  } else {
    retrace::net::BoundedResponseParser<http::string_body> parser;
    parser.header_limit(256u << 10);
    parser.body_limit(1u << 20);
    feed(parser, bytes, split);
  }
  return 0;
}
