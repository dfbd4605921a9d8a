// Format 1.7's derived tokens (format/token_deriver.hpp): the decoder's side. A header of its own,
// so that the programs that install the deriver include it and nothing else changes.
#pragma once

#include <string_view>
#include <vector>

#include "format/token_deriver.hpp"
#include "llm/llm.hpp"

namespace retrace::llm {

// An exchange's choices made from its dialect (Exchange::dialect, as ResponseDecoder::finish wrote
// it) and its response's events, by the live path's own loop: feed_sse into a ResponseDecoder,
// then finish. The TokenDeriver the writer tests an exchange with and the reader rebuilds one
// with. `choices` is overwritten; `wants` is what the reader needs of them (format/trace.hpp).
void derive_choices(std::string_view dialect, const std::vector<EventView>& events, std::vector<Choice>& choices,
                    DecodeWants wants = {});
// Installs derive_choices as the process's TokenDeriver. Every program that reads traces calls it
// once at start (cli's main, the Python module, the unit tests' main, benches, fuzz targets).
void install_token_deriver();
// The dialect to_string(Dialect) names; unknown for any other text.
Dialect dialect_from_string(std::string_view name);

}  // namespace retrace::llm
