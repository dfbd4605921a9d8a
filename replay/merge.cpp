// retrace merge: see replay/merge.hpp.
#include "replay/merge.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <memory>
#include <queue>
#include <set>

#include "base/described_json.hpp"
#include "replay/client_usage.hpp"
#include "replay/replay.hpp"
#include "replay/shard.hpp"

namespace retrace::replay {
namespace json = boost::json;

namespace {

// What may differ between the shards of one replay; everything else in the settings must agree.
RunSettings without_per_shard(RunSettings settings) {
  settings.shard.reset();
  settings.start_at.reset();
  settings.start_at_unix_ns.reset();
  settings.host.reset();
  settings.clock_offset_ns.reset();
  settings.selected.reset();
  settings.run.reset();
  settings.client.reset();
  settings.live_tool_turns.reset();  // each shard counts its own: the merged run's is the sum
  return settings;
}

std::string identity_text(const metrics::TraceIdentity& identity) {
  return json::serialize(described_json::to_json(identity));
}

struct Shard {
  std::filesystem::path path;
  std::unique_ptr<TraceReader> reader;
  RunSettings settings;
  std::size_t index = 0, count = 0;
  std::optional<std::int64_t> start_at_ns;
  std::int64_t shift_ns = 0;  // its clock's start minus the earliest shard's
  Exchange current;
  std::uint64_t present = 0;
};

std::string name(const std::filesystem::path& path) { return path.string(); }

Shard open_shard(const std::filesystem::path& path) {
  Shard shard;
  shard.path = path;
  shard.reader = std::make_unique<TraceReader>(path);
  const auto& header = shard.reader->header();
  if (header.source != Source::replayed)
    throw MergeRefused(name(path) + " is not a replay's output (its source is " +
                       std::string(to_string(header.source)) +
                       "); merge takes the outputs of one `retrace replay --shard I/N` run");
  auto settings = metrics::parse_run_settings(header.settings);
  if (!settings)
    throw MergeRefused(name(path) + " is a replay whose header settings are not a JSON object; "
                       "merge takes the outputs of one `retrace replay --shard I/N` run");
  if (!settings->input_identity) {
    // A run of one shard (--shard 0/1, or no --shard) is the whole replay: there is nothing to join.
    throw MergeRefused(name(path) + " is a whole replay" +
                       (settings->shard ? " (--shard " + *settings->shard + ")" : "") +
                       ", not one shard of several: it needs no merge; use it as it is, or merge "
                       "the outputs of a run with --shard I/N and N above 1");
  }
  if (!settings->shard)
    throw MergeRefused(name(path) + " names its input trace but no \"shard\" in its settings; "
                       "merge takes the outputs of one `retrace replay --shard I/N` run");
  shard.settings = std::move(*settings);
  std::tie(shard.index, shard.count) = parse_shard(*shard.settings.shard);
  shard.start_at_ns = shard.settings.start_at_unix_ns;
  // Unix time in int64 nanoseconds runs from 1970 to 2262; the gaps between two such starts, and
  // every time shifted by one, stay in range only when the start is a time of that span.
  if (shard.start_at_ns && *shard.start_at_ns < 0)
    throw MergeRefused(name(path) + ": its \"start_at_unix_ns\" " + std::to_string(*shard.start_at_ns) +
                       " is before 1970; a shard's --start-at is a time of its run");
  // A count past 2^53 (where JSON numbers stop being exact) is no shard's: a damaged or edited
  // header, whose "missing" would read as 18446744073709551605.
  constexpr std::uint64_t kMostSelected = std::uint64_t(1) << 53;
  if (shard.settings.selected && *shard.settings.selected > kMostSelected)
    throw MergeRefused(name(path) + ": its \"selected\" " + std::to_string(*shard.settings.selected) +
                       " is more exchanges than any run sends (at most 2^53); the header is damaged: re-run "
                       "that shard");
  return shard;
}

// `a + b`, or MergeRefused naming the exchange whose time it is: shifted onto the common clock, a
// crafted time would wrap round (signed overflow).
std::int64_t shifted(std::int64_t a, std::int64_t b, const Shard& shard, const Exchange& exchange) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw MergeRefused(name(shard.path) + ": exchange " + std::to_string(exchange.id) +
                       "'s times do not fit on the common clock (shifted by " +
                       std::to_string(shard.shift_ns) + " ns they pass 292 years); the shard is damaged "
                       "or its \"start_at_unix_ns\" was edited");
  return sum;
}

// Returns the indices of the shards none of `shards` is (never started, or left no file): merged
// without, and named.
std::vector<std::size_t> check_shards(const std::vector<Shard>& shards) {
  const auto& first = shards.front();
  for (const auto& shard : shards) {
    if (shard.settings.input_identity != first.settings.input_identity)
      throw MergeRefused(name(shard.path) + " replays a different trace than " + name(first.path) +
                         " (input " + identity_text(*shard.settings.input_identity) + " vs " +
                         identity_text(*first.settings.input_identity) + "); merge only the shards of one replay");
    if (shard.count != first.count)
      throw MergeRefused(name(shard.path) + " is shard " + std::to_string(shard.index) + "/" +
                         std::to_string(shard.count) + " but " + name(first.path) + " is one of " +
                         std::to_string(first.count) + "; merge only the shards of one replay");
  }
  std::vector<const Shard*> by_index(first.count, nullptr);
  for (const auto& shard : shards) {
    if (by_index[shard.index])
      throw MergeRefused("shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) +
                         " is given twice: " + name(by_index[shard.index]->path) + " and " +
                         name(shard.path));
    by_index[shard.index] = &shard;
  }
  std::vector<std::size_t> absent;
  for (std::size_t i = 0; i < by_index.size(); ++i)
    if (!by_index[i]) absent.push_back(i);
  auto reference = described_json::to_object(without_per_shard(first.settings));
  for (const auto& shard : shards) {
    auto settings = described_json::to_object(without_per_shard(shard.settings));
    if (settings == reference) continue;
    std::set<std::string> keys;
    for (const auto& [key, value] : settings) keys.insert(std::string(key));
    for (const auto& [key, value] : reference) keys.insert(std::string(key));
    std::string differing;
    for (const auto& key : keys) {
      auto* a = settings.if_contains(key);
      auto* b = reference.if_contains(key);
      if (!a || !b || *a != *b) differing += (differing.empty() ? "" : ", ") + key;
    }
    throw MergeRefused(name(shard.path) + " was run with other settings than " + name(first.path) +
                       " (they differ in: " + differing +
                       "); every shard of one run takes the same flags but --shard and --start-at");
  }
  return absent;
}

void set_label(std::vector<Label>& labels, const std::string& key, const std::string& value) {
  for (auto& label : labels)
    if (label.key == key) {
      label.value = value;
      return;
    }
}

// The Options that select a shard's exchanges, from the settings replay wrote (run_settings).
Options selection_of(const Shard& shard) {
  Options options;
  options.shard_index = shard.index;
  options.shard_count = shard.count;
  options.filters = shard.settings.filters;
  if (shard.settings.limit) options.limit = static_cast<std::size_t>(*shard.settings.limit);
  return options;
}

// A figure each shard had for itself (a closed loop's -c, --requests, --limit): the merged run's
// is the sum, and its _per_shard twin keeps the shard's.
template <class Figure>
void total_per_shard(std::optional<Figure>& figure, std::optional<Figure>& per_shard, std::size_t shards) {
  if (!figure) return;
  per_shard = *figure;
  *figure = static_cast<Figure>(*figure * shards);
}

std::optional<std::int64_t> clock_offset_spread(const std::vector<MergedShard>& shards) {
  std::optional<std::int64_t> low, high;
  std::size_t known = 0;
  for (const auto& shard : shards) {
    if (!shard.clock_offset_ns) continue;
    ++known;
    low = std::min(low.value_or(*shard.clock_offset_ns), *shard.clock_offset_ns);
    high = std::max(high.value_or(*shard.clock_offset_ns), *shard.clock_offset_ns);
  }
  if (known < 2) return std::nullopt;
  return *high - *low;
}

// The shards of one replay, opened, checked to be of one run, in index order.
std::vector<Shard> open_shards(const std::vector<std::filesystem::path>& paths, MergeResult& result) {
  if (paths.empty()) throw MergeRefused("no shards to merge");
  std::vector<Shard> shards;
  for (const auto& path : paths) shards.push_back(open_shard(path));
  result.absent_shards = check_shards(shards);
  result.shard_count = shards.front().count;
  std::sort(shards.begin(), shards.end(),
            [](const Shard& a, const Shard& b) { return a.index < b.index; });
  return shards;
}

// --trace: the trace the shards replayed, refused when its identity is not theirs.
// What --trace says of each shard: the ids of the exchanges its selection sends, sorted, and for
// each absent shard how many it was to send. Read as the source is streamed, requests only, one at
// a time (8 bytes a selected exchange kept, not the trace: loading it whole took 687 MiB at 1M).
struct SourceSelection {
  std::vector<std::vector<std::uint64_t>> selected;  // by position in the shards
  std::vector<std::size_t> absent_selected;          // by position in result.absent_shards
};

std::optional<SourceSelection> read_source(const MergeOptions& options, const std::vector<Shard>& shards,
                                           const MergeResult& result) {
  if (!options.source_trace) return std::nullopt;
  const auto& first = shards.front();
  // Each shard's selection by replay's own rule (Selection, as select_exchanges applies it), then
  // the absent shards' under the first shard's settings.
  std::vector<Options> rules;
  std::vector<bool> by_session;
  for (const auto& shard : shards) {
    rules.push_back(selection_of(shard));
    by_session.push_back(shard.settings.sessions);
  }
  Shard absent;
  absent.count = first.count;
  absent.settings = first.settings;
  for (auto index : result.absent_shards) {
    absent.index = index;
    rules.push_back(selection_of(absent));
    by_session.push_back(absent.settings.sessions);
  }
  std::vector<Selection> selections;
  selections.reserve(rules.size());
  for (std::size_t r = 0; r < rules.size(); ++r) selections.emplace_back(rules[r], by_session[r]);

  SourceSelection source;
  source.selected.resize(shards.size());
  source.absent_selected.resize(result.absent_shards.size());
  TraceReader reader(*options.source_trace);
  InputIdentity identity;
  Exchange exchange;
  while (reader.next_request(exchange)) {
    identity.add(exchange);
    for (std::size_t r = 0; r < selections.size(); ++r) {
      if (!selections[r].take(exchange)) continue;
      if (r < shards.size()) source.selected[r].push_back(exchange.id);
      else ++source.absent_selected[r - shards.size()];
    }
  }
  auto whole = identity.identity(reader.header().created_unix_ns);
  if (whole != first.settings.input_identity)
    throw MergeRefused("--trace " + name(*options.source_trace) + " is not the trace the shards "
                       "replayed (its identity " + identity_text(whole) + " is not " +
                       identity_text(*first.settings.input_identity) + ")");
  for (const auto& selection : selections) selection.check_filters_matched();
  for (auto& ids : source.selected) std::sort(ids.begin(), ids.end());
  return source;
}

// The common clock: the earliest start_at; a shard that started later is shifted by the gap.
std::optional<std::int64_t> align_clocks(std::vector<Shard>& shards) {
  std::optional<std::int64_t> common_start;
  for (const auto& shard : shards)
    if (shard.start_at_ns) common_start = std::min(common_start.value_or(*shard.start_at_ns), *shard.start_at_ns);
  for (auto& shard : shards)
    if (shard.start_at_ns) shard.shift_ns = *shard.start_at_ns - *common_start;
  return common_start;
}

// One shard's facts, as the result reports them and as the merged header's "shards" lists them.
MergedShard merged_facts(const Shard& shard) {
  MergedShard merged;
  merged.path = shard.path;
  merged.index = shard.index;
  merged.host = shard.settings.host.value_or("");
  merged.start_at = shard.settings.start_at.value_or("");
  merged.clock_offset_ns = shard.settings.clock_offset_ns;
  merged.selected = shard.settings.selected.value_or(0);
  return merged;
}

metrics::ShardFact fact_of(const Shard& shard, const MergedShard& merged) {
  return {shard.index,     shard.path.filename().string(),
          merged.host,     shard.settings.start_at,
          merged.clock_offset_ns, merged.selected,
          shard.settings.client};
}

// What every merged exchange and the merged header carry.
struct MergedRun {
  TraceHeader header;
  std::string run;
  bool closed_loop = false;
};

// The schedule's per-shard figures summed; whether the run was a closed loop.
bool total_schedule(RunSettings& settings, std::size_t shard_count, MergeResult& result) {
  total_per_shard(settings.requests, settings.requests_per_shard, shard_count);
  total_per_shard(settings.limit, settings.limit_per_shard, shard_count);
  if (!settings.schedule) return false;
  auto& schedule = *settings.schedule;
  total_per_shard(schedule.max_in_flight, schedule.max_in_flight_per_shard, shard_count);
  if (schedule.kind != "concurrency") return false;
  total_per_shard(schedule.concurrency, schedule.concurrency_per_shard, shard_count);
  result.total_concurrency = schedule.concurrency.value_or(0);
  return true;
}

// The merged header: shard 0's, saying every shard's facts and the total concurrency. Fills
// result.shards (by index) and the clock offsets' spread.
MergedRun merged_header(const std::vector<Shard>& shards, std::optional<std::int64_t> common_start,
                        const std::filesystem::path& out, MergeResult& result) {
  MergedRun merged_run;
  merged_run.header = shards.front().reader->header();
  RunSettings settings = without_per_shard(shards.front().settings);
  std::vector<metrics::ShardFact> facts;
  std::uint64_t selected_total = 0;
  std::string run = shards.front().settings.run.value_or("");
  // The merged run's client headroom is its most loaded shard's: one saturated client is enough to
  // have set the pace (metrics/client_usage.hpp); each shard's own stays in its facts.
  for (const auto& shard : shards) {
    MergedShard merged = merged_facts(shard);
    selected_total += merged.selected;
    if (shard.settings.run.value_or("") != run) run.clear();
    const auto& usage = shard.settings.client;
    if (usage && (!settings.client || usage->busiest_thread_share() > settings.client->busiest_thread_share()))
      settings.client = usage;
    facts.push_back(fact_of(shard, merged));
    result.shards.push_back(std::move(merged));
    if (const auto& turns = shard.settings.live_tool_turns) {
      auto& total = settings.live_tool_turns;
      if (!total) total = metrics::LiveToolTurns{turns->rule, 0, 0};
      total->substituted += turns->substituted;
      total->kept_as_recorded += turns->kept_as_recorded;
    }
  }
  if (run.empty()) run = out.stem().string();
  settings.run = run;
  settings.selected = selected_total;
  settings.start_at_unix_ns = common_start;
  settings.shards = std::move(facts);
  result.clock_offset_spread_ns = clock_offset_spread(result.shards);
  settings.clock_offset_spread_ns = result.clock_offset_spread_ns;
  merged_run.closed_loop = total_schedule(settings, shards.size(), result);
  merged_run.header.settings = metrics::to_json(settings);
  set_label(merged_run.header.labels, "run", run);
  if (merged_run.closed_loop)
    set_label(merged_run.header.labels, "concurrency", std::to_string(result.total_concurrency));
  merged_run.run = std::move(run);
  return merged_run;
}

// A k-way merge by completion on the common clock (replay/merge.hpp says why), written to out;
// with a source trace, each shard's source ids are collected in present_ids. Returns the count.
std::uint64_t write_merged(std::vector<Shard>& shards, const MergedRun& merged_run, bool collect_ids,
                           std::vector<std::vector<std::uint64_t>>& present_ids,
                           const std::filesystem::path& out, const MergeOptions& options, MergeResult& result) {
  // Computed once per exchange, when it is read (a refusal is not thrown from inside the heap).
  auto completion = [](const Shard& shard) {
    const auto& e = shard.current;
    return shifted(shifted(e.actual_send_ns, std::max<std::int64_t>(e.end_ns, 0), shard, e),
                   shard.shift_ns, shard, e);
  };
  std::vector<std::int64_t> completes_at(shards.size(), 0);
  auto later = [&](std::size_t a, std::size_t b) {
    auto ka = completes_at[a], kb = completes_at[b];
    return ka != kb ? ka > kb : a > b;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heads(later);
  // A drained shard's reader goes at once: at its end it has read the file's index (every key),
  // which the merge does not need.
  auto advance = [&](std::size_t s) {
    if (shards[s].reader->next(shards[s].current)) {
      ++shards[s].present;
      if (collect_ids && shards[s].current.source_id) present_ids[s].push_back(*shards[s].current.source_id);
      completes_at[s] = completion(shards[s]);
      heads.push(s);
      return;
    }
    result.shards[s].recovery = shards[s].reader->recovery();
    shards[s].reader.reset();
    shards[s].current = Exchange{};
  };
  const std::string concurrency = std::to_string(result.total_concurrency);
  std::uint64_t next_id = 0;
  auto writer = std::make_unique<TraceWriter>(out, merged_run.header, options.writer);
  // The server's /metrics series (format 1.5): the first shard's, on the common clock. Every shard
  // scraped the same server, so one view of it is kept: its counters' deltas counted once.
  if (!shards.empty() && shards.front().reader)
    shards.front().reader->on_metrics([&](const MetricScrape& scrape) {
      MetricScrape shifted_scrape = scrape;
      shifted_scrape.offset_ns = shifted(scrape.offset_ns, shards.front().shift_ns, shards.front(), shards.front().current);
      writer->write(shifted_scrape);
    });
  try {
    for (std::size_t s = 0; s < shards.size(); ++s) advance(s);
    while (!heads.empty()) {
      auto s = heads.top();
      heads.pop();
      auto& exchange = shards[s].current;
      exchange.id = next_id++;
      exchange.intended_send_ns = shifted(exchange.intended_send_ns, shards[s].shift_ns, shards[s], exchange);
      exchange.actual_send_ns = shifted(exchange.actual_send_ns, shards[s].shift_ns, shards[s], exchange);
      auto& state = exchange.server_state;  // the join's samples are on the shard's clock too
      for (auto* sample : {&state.at_send, &state.at_first_token, &state.at_end})
        if (sample->scrape_ns >= 0) sample->scrape_ns = shifted(sample->scrape_ns, shards[s].shift_ns, shards[s], exchange);
      set_label(exchange.labels, "run", merged_run.run);
      if (merged_run.closed_loop) set_label(exchange.labels, "concurrency", concurrency);
      writer->write(exchange);
      advance(s);
    }
  } catch (const MergeRefused&) {
    // A refused merge writes nothing: the half-written output goes.
    writer.reset();
    std::error_code ignored;
    std::filesystem::remove(out, ignored);
    throw;
  }
  writer->close();
  return next_id;
}

// Each shard's exchanges found, the total missing, and with a source trace the missing ids.
void count_missing(const std::vector<Shard>& shards, const std::optional<SourceSelection>& source,
                   std::vector<std::vector<std::uint64_t>>& present_ids, MergeResult& result) {
  for (std::size_t s = 0; s < shards.size(); ++s) {
    result.shards[s].present = shards[s].present;
    result.missing += result.shards[s].missing();
    if (!source) continue;
    auto& present = present_ids[s];
    std::sort(present.begin(), present.end());
    for (auto id : source->selected[s])
      if (!std::binary_search(present.begin(), present.end(), id)) result.shards[s].missing_ids.push_back(id);
  }
  // A shard with no output: every exchange it was to send is missing (known with the source).
  if (!source) return;
  for (auto count : source->absent_selected) {
    result.absent_selected.push_back(count);
    result.missing += count;
  }
}

}  // namespace

MergeResult merge_shards(const std::vector<std::filesystem::path>& paths,
                         const std::filesystem::path& out, const MergeOptions& options) {
  MergeResult result;
  std::vector<Shard> shards = open_shards(paths, result);
  std::optional<SourceSelection> source = read_source(options, shards, result);
  std::vector<std::vector<std::uint64_t>> present_ids(source ? shards.size() : 0);
  auto common_start = align_clocks(shards);
  MergedRun merged_run = merged_header(shards, common_start, out, result);
  result.exchanges = write_merged(shards, merged_run, source.has_value(), present_ids, out, options, result);
  count_missing(shards, source, present_ids, result);
  return result;
}

}  // namespace retrace::replay
