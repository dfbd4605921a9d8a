// What a recording's trace header says of how it was recorded ("settings"): one described struct,
// written with described_json (base/described_json.hpp) and read back the same way, so that no
// writer or reader spells a key by hand. The keys are those record wrote before the struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/describe.hpp>

#include "record/record.hpp"

namespace retrace::record {

struct RecordSettings {
  std::string command = "record";
  std::string upstream;
  std::string listen;  // host:port
  std::string session_header;
  std::vector<std::string> redacted_headers;  // empty with --keep-secrets
  bool keep_secrets = false;
  std::vector<std::string> include_paths, exclude_paths;
  std::uint64_t max_body = 0;
  double sample = 1.0;
  std::uint64_t seed = 0;
  std::uint64_t max_response_bytes = 0;
  std::uint64_t flush_every = 0;
  std::int64_t flush_ms = 0;
  std::int64_t upstream_timeout_ms = 0;
  bool insecure = false;
  std::string ca_file;
  bool derive_tokens = false;  // --derive-tokens (format 1.7's derived tokens)
};
BOOST_DESCRIBE_STRUCT(RecordSettings, (),
                      (command, upstream, listen, session_header, redacted_headers, keep_secrets,
                       include_paths, exclude_paths, max_body, sample, seed, max_response_bytes,
                       flush_every, flush_ms, upstream_timeout_ms, insecure, ca_file, derive_tokens))

RecordSettings record_settings(const RecordOptions& options);
// A recording's header settings read back (tolerant: absent or mistyped keys keep their defaults).
RecordSettings parse_record_settings(const std::string& settings);

}  // namespace retrace::record
