// URL and --listen parsing on arbitrary text: a Url or std::invalid_argument; a parsed URL's
// own str() parses again to the same URL.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "net/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto url = retrace::net::parse_url(text);
    auto again = retrace::net::parse_url(url.str());
    if (again.str() != url.str() || again.host != url.host || again.port != url.port) std::abort();
  } catch (const std::invalid_argument&) {
  }
  try {
    (void)retrace::net::parse_listen(text);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
