// What exchanges() reads of a request body and a response beyond the trace's own figures: the
// sampling as sent and the cached tokens, by the rules of sweep/'s study audit (sweep::audit_body,
// sweep::cached_tokens_of), read with JsonPaths (one SAX pass a text, no JSON tree) instead of
// the audit's parse of each body and event: that parse was a third of exchanges()' cost over the
// reader's on streamed replays. The columns are what exchanges() made of the audit's JSON text:
// a float column the number (NaN when absent, not a number or not finite), an integer column the
// number when it is a whole one within int64 (else absent). tests/python/test_audit_reader.py
// checks both readers against the audit itself (audited_sampling, audited_cached_tokens).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "format/trace.hpp"
#include "python/json_paths.hpp"

namespace retrace::python {

struct SamplingAsSent {
  double temperature, top_p;
  std::optional<std::int64_t> top_k, seed, n;
};

// The first non-null value of the top level, SGLang's "sampling_params" or TGI's "parameters".
class SamplingReader {
 public:
  SamplingAsSent read(std::string_view body);

 private:
  JsonPaths paths_{{"temperature"}, {"top_p"}, {"top_k"}, {"seed"}, {"n"},
                   {"sampling_params", "temperature"}, {"sampling_params", "top_p"}, {"sampling_params", "top_k"},
                   {"sampling_params", "seed"}, {"sampling_params", "n"},
                   {"parameters", "temperature"}, {"parameters", "top_p"}, {"parameters", "top_k"},
                   {"parameters", "seed"}, {"parameters", "n"}};
};

// What the response says of the prompt cache: sweep::cached_tokens_of.
class CachedTokensReader {
 public:
  std::optional<std::int64_t> read(const Exchange& exchange);

 private:
  // nullopt: not said; sets `exact` false where only the audit's own conversion can say.
  std::optional<std::int64_t> cached_in(std::string_view text, bool& parsed, bool& exact);
  JsonPaths paths_{{"usage", "prompt_tokens_details", "cached_tokens"},
                   {"meta_info", "cached_tokens"},
                   {"timings", "cache_n"},
                   {"usage", "cached_tokens"}};
};

// The same the long way, through the audit's parse (what the readers must equal).
SamplingAsSent audited_sampling(std::string_view body);
std::optional<std::int64_t> audited_cached_tokens(const Exchange& exchange);

}  // namespace retrace::python
