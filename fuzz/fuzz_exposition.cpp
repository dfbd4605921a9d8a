// The Prometheus /metrics parser (llm/exposition.hpp) and the deltas made of its pages
// (llm/server_metrics.hpp) on arbitrary text: never a crash; every sample kept renders
// (series_name) to a line that parses back to the same name and labels; the bounds hold (at
// most max_samples samples, at most kMaxNamedErrors errors named); and the same page read twice
// gives no counter a delta.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "llm/exposition.hpp"
#include "llm/server_metrics.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace retrace;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr std::size_t kMax = 64;
  auto page = llm::parse_exposition(text, kMax);
  if (page.samples.size() > kMax || page.errors.size() > llm::kMaxNamedErrors) std::abort();
  if (page.errors.size() > page.malformed) std::abort();
  for (const auto& sample : page.samples) {
    auto line = llm::series_name(sample) + " 1\n";
    auto again = llm::parse_exposition(line);
    if (again.samples.size() != 1 || again.malformed != 0) std::abort();
    if (again.samples[0].name != sample.name || again.samples[0].labels != sample.labels) std::abort();
  }
  llm::SeriesDeltas deltas;
  MetricScrape first, second;
  deltas.take(page, first);
  deltas.take(page, second);
  for (const auto& value : second.values)
    if (value.kind == SeriesKind::counter && value.value != 0) std::abort();
  for (const auto& value : first.values)
    if (!std::isfinite(value.value)) std::abort();
  return 0;
}
