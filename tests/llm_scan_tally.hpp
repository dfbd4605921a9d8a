// The check both scanner tests run on each input (tests/llm_fast_scan_test.cpp,
// tests/llm_shape_reader_test.cpp): the scanner against basic_parser, and the fast path's parser
// with the scanner, without it and skipping values against each other (fuzz/scan_differential.hpp).
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/json/basic_parser_impl.hpp>

#include "fuzz/scan_differential.hpp"

namespace retrace::testing {

// basic_parser takes `data` as one whole document.
inline bool parser_accepts(std::string_view data) {
  boost::json::basic_parser<fuzzing::RecordingHandler> parser(llm::decoder_parse_options());
  boost::json::error_code ec;
  return parser.write_some(false, data.data(), data.size(), ec) == data.size() && !ec;
}

struct Tally {
  std::size_t inputs = 0, scanned = 0, accepted = 0;
  fuzzing::ScanAndParse fast;

  // Both checks on one input; true when the scanner read it to the end.
  bool check(std::string_view data) {
    ++inputs;
    const fuzzing::ScanVerdict verdict = fuzzing::scan_against_parser(data);
    INFO("input: " << std::string(data.substr(0, 2000)));
    CHECK(verdict != fuzzing::ScanVerdict::differs);
    CHECK(fast.agree(data));
    if (verdict == fuzzing::ScanVerdict::scanned) ++scanned;
    if (parser_accepts(data)) ++accepted;
    return verdict == fuzzing::ScanVerdict::scanned;
  }
};

}  // namespace retrace::testing
