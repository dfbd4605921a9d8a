// `retrace serve`'s API request parsers on arbitrary bodies: a request or an ApiError with a
// 4xx status; never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/api.hpp"
#include "sim/engine.hpp"
#include "sim/server.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const retrace::sim::Model model;
  static const retrace::sim::AnswerBook answers;
  static const retrace::sim::ServeOptions options;
  retrace::sim::ParseContext context{model, answers, options, 1};
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 3 == 2)
      (void)retrace::sim::parse_tokenize(body, options);
    else
      (void)retrace::sim::parse_request(data[0] % 3 ? retrace::sim::Endpoint::chat
                                                    : retrace::sim::Endpoint::completions,
                                        body, context);
  } catch (const retrace::sim::ApiError& error) {
    if (error.status < 400 || error.status >= 500) std::abort();
  }
  return 0;
}
