// A server's Prometheus /metrics page (the text exposition format, version 0.0.4, and the
// OpenMetrics lines vLLM and SGLang also send) read into samples, and the one alias table that
// names what every engine calls the same thing alike.
//
//   # HELP name text            ignored
//   # TYPE name counter|gauge|histogram|summary|untyped    the family's type
//   # anything else, # EOF      ignored
//   name{label="value",...} value [timestamp_ms]           one sample
//
// Values are floats as Go writes them (NaN, +Inf, -Inf included); label values escape \\, \" and
// \n. A line that is none of these is malformed: counted, named with its line number (the first
// kMaxNamedErrors of them), and skipped; the page's other samples stand.
//
// Bounds: the page is read as given (the caller bounds its bytes), at most `max_samples` samples
// are kept (the rest counted), and every lookup while reading is O(1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace retrace::llm {

enum class MetricType : std::uint8_t { untyped, counter, gauge, histogram, summary };

struct ExpositionSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // as exposed, unescaped, in order
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;
  MetricType type = MetricType::untyped;  // its family's # TYPE (histogram's _bucket/_sum/_count too)
  bool operator==(const ExpositionSample&) const = default;
};

inline constexpr std::size_t kMaxNamedErrors = 5;

struct Exposition {
  std::vector<ExpositionSample> samples;
  std::size_t malformed = 0;        // lines that were none of the above
  std::vector<std::string> errors;  // "line N: what", the first kMaxNamedErrors malformed lines
  std::size_t dropped = 0;          // samples past max_samples
  std::size_t skipped = 0;          // histogram and summary samples not read (distributions off)
};

// `distributions` false: the samples of a family typed histogram or summary are skipped as soon
// as their name is read (no labels, no value; counted in `skipped`), which is most of a vLLM
// page and nothing the alias table names. A scrape loop reads its pages so after the first.
inline constexpr std::size_t kMaxPageSamples = 20000;
Exposition parse_exposition(std::string_view text, std::size_t max_samples = kMaxPageSamples,
                            bool distributions = true);

// `name{a="b",c="d"}` with the label values escaped again (or `name` alone): a sample's series
// name as the trace keeps an unknown series. parse_exposition of it, with a value, gives the
// sample back.
std::string series_name(const ExpositionSample& sample);

// What a sample is when an engine's name for it is in the alias table: the normalised series
// (running, waiting, kv_usage, preemptions, prefix_cache_queries, prefix_cache_hits,
// prefix_cache_hit_rate, spec_decode_draft_tokens, spec_decode_accepted_tokens) and whether it is
// a counter. nullopt for a series no alias names.
struct Alias {
  std::string_view series;
  bool counter = false;
};
std::optional<Alias> alias_of(const ExpositionSample& sample);

}  // namespace retrace::llm
