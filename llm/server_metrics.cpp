// llm/server_metrics.hpp: a /metrics page normalised, counters made deltas.
#include "llm/server_metrics.hpp"

#include <cmath>
#include <unordered_set>
#include <vector>

namespace retrace::llm {
namespace {

bool is_fraction(std::string_view series) {
  return series == "kv_usage" || series == "prefix_cache_hit_rate" || series == "spec_decode_acceptance";
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Whether an unknown sample only grows: a counter, or a histogram's or summary's cumulative parts.
bool cumulative(const ExpositionSample& sample) {
  switch (sample.type) {
    case MetricType::counter: return true;
    case MetricType::histogram: return true;
    case MetricType::summary: return ends_with(sample.name, "_sum") || ends_with(sample.name, "_count");
    default: return false;
  }
}

void append_note(std::string& note, const std::string& more) {
  if (!note.empty()) note += "; ";
  note += more;
}

}  // namespace

void SeriesDeltas::take(const Exposition& page, MetricScrape& scrape) {
  struct Aggregate {
    double sum = 0;
    int count = 0;
    bool counter = false;
  };
  // Aliased series in the order first met, so a scrape's values keep the page's order.
  std::vector<std::pair<std::string, Aggregate>> aliased;
  std::unordered_map<std::string_view, std::size_t> aliased_at;
  struct Raw {
    std::string series;
    double value;
    bool counter;
  };
  std::vector<Raw> raw;
  std::unordered_set<std::string> raw_seen;
  std::size_t not_finite = 0, repeated = 0;
  for (const auto& sample : page.samples) {
    if (!std::isfinite(sample.value)) {
      ++not_finite;
      continue;
    }
    if (auto alias = alias_of(sample)) {
      auto [at, fresh] = aliased_at.try_emplace(alias->series, aliased.size());
      if (fresh) aliased.push_back({std::string(alias->series), Aggregate{0, 0, alias->counter}});
      auto& aggregate = aliased[at->second].second;
      aggregate.sum += sample.value;
      ++aggregate.count;
      continue;
    }
    auto name = series_name(sample);
    if (!raw_seen.insert(name).second) {  // a series listed twice on one page: the first stands
      ++repeated;
      continue;
    }
    raw.push_back({std::move(name), sample.value, cumulative(sample)});
  }

  scrape.values.clear();
  std::vector<std::string> resets;
  auto add = [&](std::string series, double value, bool counter) {
    if (!counter) {
      scrape.values.push_back({std::move(series), SeriesKind::gauge, value});
      return;
    }
    auto [last, fresh] = last_.try_emplace(series, value);
    double delta = 0;
    if (!fresh) {
      delta = value - last->second;
      if (delta < 0) {
        if (resets.size() < kMaxNamedErrors) resets.push_back(series);
        delta = value;  // counting from 0 again
      }
      last->second = value;
    }
    if (first_ || delta != 0) scrape.values.push_back({std::move(series), SeriesKind::counter, delta});
  };
  for (auto& [series, aggregate] : aliased) {
    double value = is_fraction(series) ? aggregate.sum / aggregate.count : aggregate.sum;
    add(std::move(series), value, aggregate.counter);
  }
  for (auto& sample : raw) add(std::move(sample.series), sample.value, sample.counter);
  first_ = false;

  if (!resets.empty()) {
    std::string names;
    for (const auto& name : resets) names += (names.empty() ? "" : ", ") + name;
    append_note(scrape.note, "counter reset (the server restarted?), counted from 0: " + names);
  }
  if (page.malformed > 0) {
    std::string first = page.errors.empty() ? "" : " (" + page.errors.front() + ")";
    append_note(scrape.note, std::to_string(page.malformed) + " malformed line" +
                                 (page.malformed == 1 ? "" : "s") + " skipped" + first);
  }
  if (page.dropped > 0)
    append_note(scrape.note, std::to_string(page.dropped) + " samples past the first " +
                                 std::to_string(page.samples.size()) + " not kept");
  if (repeated > 0)
    append_note(scrape.note, std::to_string(repeated) + " repeated series not kept (the first of each stands)");
  if (not_finite > 0)
    append_note(scrape.note, std::to_string(not_finite) + " NaN or infinite values not kept");
}

}  // namespace retrace::llm
