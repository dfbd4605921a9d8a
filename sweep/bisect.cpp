// Bisect: binary search for the first point along an ordered axis whose outputs differ from the
// baseline (point 0), with the probe injected so the search itself is testable without traffic.
#include <charconv>
#include <map>
#include <stdexcept>

#include "sweep/sweep.hpp"

namespace retrace::sweep {

std::size_t probe_budget(std::size_t points) {
  std::size_t log2_ceiling = 0;
  while ((std::size_t{1} << log2_ceiling) < points) ++log2_ceiling;
  return log2_ceiling + 2;
}

BisectResult bisect(std::size_t points, const std::function<ProbeOutcome(std::size_t)>& probe,
                    const std::function<void(const Probe&)>& on_probe) {
  if (points < 2) throw std::invalid_argument("bisect needs a baseline and at least one more point");
  BisectResult result;
  std::map<std::size_t, bool> known;  // point -> differs
  auto run_probe = [&](std::size_t index, bool verification) {
    Probe entry{index, probe(index), verification};
    known[index] = entry.outcome.differs;
    if (on_probe) on_probe(entry);
    result.probes.push_back(std::move(entry));
    return result.probes.back().outcome.differs;
  };

  // First differing point in [1, points); `high == points` stands for "none differs", never
  // probed. ⌈log2(points)⌉ probes at most.
  std::size_t low = 1, high = points;
  while (low < high) {
    std::size_t middle = low + (high - low) / 2;
    if (run_probe(middle, false))
      high = middle;
    else
      low = middle + 1;
  }
  if (high == points) {
    result.note = "no point differs from the baseline";
    return result;
  }
  result.boundary = high;

  // The search probed boundary - 1 (not differing) unless it is the baseline. The upper neighbour
  // checks the monotonicity assumption: outputs that started to differ should keep differing.
  std::size_t above = high + 1;
  if (above < points) {
    bool differs = known.count(above) ? known[above] : run_probe(above, true);
    if (!differs) {
      result.monotonic = false;
      result.note = "outputs differ at the boundary but not at the point after it: the axis is "
                    "not monotonic here (nondeterminism?); repeat the bisect or run a sweep";
    }
  }
  return result;
}

std::vector<int> parse_range(std::string_view text) {
  auto dots = text.find("..");
  auto parse = [&](std::string_view item) {
    int value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc{} || end != item.data() + item.size() || value < 1)
      throw std::invalid_argument("--range '" + std::string(text) +
                                  "': expected FROM..TO with positive integers, e.g. 1..64");
    return value;
  };
  if (dots == std::string_view::npos)
    throw std::invalid_argument("--range '" + std::string(text) + "': expected FROM..TO, e.g. 1..64");
  int from = parse(text.substr(0, dots)), to = parse(text.substr(dots + 2));
  if (to <= from)
    throw std::invalid_argument("--range '" + std::string(text) + "': TO must be greater than FROM");
  if (to - from > 1'000'000) throw std::invalid_argument("--range: at most a million points");
  std::vector<int> values;
  for (int value = from; value <= to; ++value) values.push_back(value);
  return values;
}

}  // namespace retrace::sweep
