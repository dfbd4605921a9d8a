// The sampling a request body sent, as exchanges() shows it, read without building the body's
// JSON tree. The rule is sweep/'s study audit (sweep::audit_body: the first non-null value of
// the top level, SGLang's "sampling_params" or TGI's "parameters"; the last of duplicate keys;
// the text between the body's first '{' and last '}') and the columns what exchanges() made of
// that audit's JSON text: a float column is the number (NaN when absent, not a number or not
// finite), an integer column the number when it is a whole one within int64 (else absent).
// This reader applies that rule in one pass of Boost.JSON's SAX parser (the same grammar and
// limits as the audit's parse, no allocation a body); tests/python/test_sampling.py checks it
// against the rule on bodies of every kind.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace retrace::python {

struct SamplingAsSent {
  double temperature, top_p;
  std::optional<std::int64_t> top_k, seed, n;
};

class SamplingReader {
 public:
  SamplingReader();
  ~SamplingReader();
  SamplingAsSent read(std::string_view body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The same columns made the long way, from sweep::audit_body's JSON text (what the reader must
// equal; retrace._sampling_audited for the tests).
SamplingAsSent audited_sampling(std::string_view body);

}  // namespace retrace::python
