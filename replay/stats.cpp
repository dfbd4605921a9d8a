// The figures of a run: throughput, TTFT, inter-token latency, TPOT, end-to-end latency, goodput.
//
// Definitions (the same as vLLM's benchmark_serving where it defines one):
// - TTFT: send -> first event carrying a token; streamed responses only (a non-streamed response
//   has no first token distinct from its end, so it is not counted rather than counted wrong).
// - ITL: gaps between successive token-carrying events of choice 0 (tokens coalesced into one
//   event are one gap, as a client sees them).
// - TPOT: (end - first token) / (output tokens - 1), for streamed responses with > 1 token.
// - e2e: send -> last byte. "_intended" variants add the schedule slip (actual - intended send):
//   the latency a user arriving on schedule would have seen (wrk2's coordinated-omission fix).
// - duration: first send to last end; requests/s and tokens/s count completed exchanges only.
#include <algorithm>
#include <boost/json.hpp>
#include <limits>
#include <map>

#include "replay/replay.hpp"

namespace retrace::replay {

ExchangeMetrics summarize(const Exchange& exchange) {
  ExchangeMetrics metrics;
  metrics.error = exchange.error.kind;
  metrics.streamed = exchange.response.streamed;
  metrics.retried = exchange.retries > 0;
  metrics.intended_send_ns = exchange.intended_send_ns;
  metrics.actual_send_ns = exchange.actual_send_ns;
  metrics.end_ns = exchange.end_ns;
  for (const auto& choice : exchange.choices) {
    if (!choice.tokens.empty() &&
        (metrics.first_token_ns < 0 || choice.tokens.front().offset_ns < metrics.first_token_ns))
      metrics.first_token_ns = choice.tokens.front().offset_ns;
  }
  metrics.output_tokens = output_tokens(exchange);
  metrics.input_tokens = exchange.usage.prompt_tokens;
  metrics.sent = exchange.response.status != 0 || exchange.error.kind != ErrorKind::none;
  // A request record rejected itself never reached the server: listed apart, not a request of
  // the run, whatever its path.
  bool rejected = exchange.error.kind == ErrorKind::rejected;
  metrics.inference =
      !rejected && llm::is_inference_request(exchange.request.target, exchange.request.body);
  if (!metrics.inference) {
    std::string_view path = exchange.request.target;
    path = path.substr(0, path.find('?'));
    metrics.endpoint = exchange.request.method + " " + std::string(path);
    if (rejected)
      metrics.endpoint = "rejected by record (" + std::to_string(exchange.response.status) + ") " +
                         metrics.endpoint;
  }
  if (!exchange.choices.empty()) {
    const auto& tokens = exchange.choices.front().tokens;
    for (std::size_t i = 1; i < tokens.size(); ++i) {
      auto gap = tokens[i].offset_ns - tokens[i - 1].offset_ns;
      if (gap > 0) metrics.token_gaps_ns.push_back(gap);
    }
  }
  return metrics;
}

std::optional<std::int64_t> ttft_of(const ExchangeMetrics& m) {
  if (!m.streamed || m.first_token_ns < 0) return std::nullopt;
  return m.first_token_ns;
}

std::optional<double> tpot_of(const ExchangeMetrics& m) {
  if (!m.streamed || m.first_token_ns < 0 || m.output_tokens.count <= 1 ||
      m.end_ns < m.first_token_ns)
    return std::nullopt;
  return static_cast<double>(m.end_ns - m.first_token_ns) /
         static_cast<double>(m.output_tokens.count - 1);
}

bool is_open_loop(const TraceHeader& header) {
  if (header.source != Source::replayed) return false;
  boost::json::error_code ec;
  auto settings = boost::json::parse(header.settings, ec);
  if (ec || !settings.is_object()) return false;
  auto* schedule = settings.as_object().if_contains("schedule");
  if (!schedule || !schedule->is_object()) return false;
  auto* kind = schedule->as_object().if_contains("kind");
  return kind && kind->is_string() && (kind->as_string() == "rate" || kind->as_string() == "recorded");
}

namespace {

// Traces that kept only wall-clock starts (some recorders, imports): derive send offsets.
void fill_offsets_from_wall_clock(std::vector<ExchangeMetrics>& metrics,
                                  const std::vector<std::int64_t>& start_unix_ns) {
  bool no_offsets = std::all_of(metrics.begin(), metrics.end(),
                                [](const ExchangeMetrics& m) { return m.actual_send_ns == 0; });
  if (!no_offsets || metrics.size() < 2) return;
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  for (auto start : start_unix_ns)
    if (start > 0) first = std::min(first, start);
  for (std::size_t i = 0; i < metrics.size(); ++i)
    if (start_unix_ns[i] > 0) {
      metrics[i].actual_send_ns = start_unix_ns[i] - first;
      metrics[i].intended_send_ns = metrics[i].actual_send_ns;
    }
}

// Peak and time-weighted mean of the requests in flight between `first_send` and `last_end`.
void fill_in_flight(const std::vector<ExchangeMetrics>& metrics, Stats& stats) {
  std::vector<std::pair<std::int64_t, int>> edges;  // (time, +1 send / -1 end); ends sort first
  double busy_ns = 0;
  for (const auto& m : metrics) {
    if (!m.inference || m.end_ns < 0) continue;
    edges.emplace_back(m.actual_send_ns, +1);
    edges.emplace_back(m.actual_send_ns + m.end_ns, -1);
    busy_ns += static_cast<double>(m.end_ns);
  }
  std::sort(edges.begin(), edges.end());
  long current = 0;
  for (const auto& [time, step] : edges) {
    current += step;
    stats.peak_in_flight = std::max(stats.peak_in_flight, static_cast<std::size_t>(std::max(current, 0L)));
  }
  if (stats.duration_s > 0) stats.mean_in_flight = busy_ns / 1e9 / stats.duration_s;
}

}  // namespace

Stats compute_stats(const TraceHeader& header, const std::vector<Exchange>& exchanges,
                    const Slo& slo) {
  std::vector<ExchangeMetrics> metrics;
  std::vector<std::int64_t> starts;
  metrics.reserve(exchanges.size());
  for (const auto& exchange : exchanges) {
    metrics.push_back(summarize(exchange));
    starts.push_back(exchange.start_unix_ns);
  }
  fill_offsets_from_wall_clock(metrics, starts);
  return compute_stats(is_open_loop(header), metrics, slo);
}

Stats stats_of_trace(const std::filesystem::path& path, const Slo& slo, Recovery* recovery) {
  TraceReader reader(path);
  std::vector<ExchangeMetrics> metrics;
  std::vector<std::int64_t> starts;
  Exchange exchange;
  while (reader.next(exchange)) {
    metrics.push_back(summarize(exchange));
    starts.push_back(exchange.start_unix_ns);
  }
  if (recovery) *recovery = reader.recovery();
  fill_offsets_from_wall_clock(metrics, starts);
  return compute_stats(is_open_loop(reader.header()), metrics, slo);
}

Stats compute_stats(bool open_loop, const std::vector<ExchangeMetrics>& metrics, const Slo& slo) {
  Stats stats;
  stats.open_loop = open_loop;
  std::map<ErrorKind, std::size_t> errors;
  std::map<std::string, std::size_t> other_requests;
  OutputTokenTally tokens;
  std::vector<double> ttft, itl, tpot, e2e, ttft_intended, e2e_intended, slip;
  std::int64_t first_send = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  std::size_t slo_met = 0;
  constexpr double kMs = 1e6;

  for (const auto& m : metrics) {
    if (!m.inference) {
      ++other_requests[m.endpoint];
      continue;
    }
    ++stats.exchanges;
    if (!m.sent) {
      ++stats.not_sent;
      continue;
    }
    first_send = std::min(first_send, m.actual_send_ns);
    if (m.end_ns >= 0) last_end = std::max(last_end, m.actual_send_ns + m.end_ns);
    if (m.retried) ++stats.retried;
    if (m.error != ErrorKind::none) {
      ++errors[m.error];
      continue;
    }
    ++stats.completed;
    tokens.add(m.output_tokens);
    if (m.input_tokens >= 0)
      stats.input_tokens = stats.input_tokens.value_or(0) + static_cast<std::uint64_t>(m.input_tokens);
    auto slip_ns = m.actual_send_ns - m.intended_send_ns;
    slip.push_back(static_cast<double>(slip_ns) / kMs);

    std::optional<std::int64_t> first_token_ns = ttft_of(m);
    std::optional<double> tpot_ns = tpot_of(m);
    if (first_token_ns) {
      ttft.push_back(static_cast<double>(*first_token_ns) / kMs);
      ttft_intended.push_back(static_cast<double>(*first_token_ns + slip_ns) / kMs);
      for (auto gap : m.token_gaps_ns) itl.push_back(static_cast<double>(gap) / kMs);
      if (tpot_ns) tpot.push_back(*tpot_ns / kMs);
    }
    if (m.end_ns >= 0) {
      e2e.push_back(static_cast<double>(m.end_ns) / kMs);
      e2e_intended.push_back(static_cast<double>(m.end_ns + slip_ns) / kMs);
    }

    if (slo.any()) {
      // Open loop: judged from the intended send, as the user on schedule experienced it.
      std::int64_t counted_slip = open_loop ? slip_ns : 0;
      std::int64_t ttft_ns = (first_token_ns ? *first_token_ns : m.end_ns) + counted_slip;
      bool met = m.end_ns >= 0;
      if (slo.ttft && ttft_ns > slo.ttft->count()) met = false;
      if (slo.tpot && tpot_ns && *tpot_ns > static_cast<double>(slo.tpot->count())) met = false;
      if (slo.e2e && m.end_ns + counted_slip > slo.e2e->count()) met = false;
      if (met) ++slo_met;
    }
  }

  stats.output_tokens = tokens.total;
  stats.output_tokens_source = tokens.source();
  stats.other_requests.assign(other_requests.begin(), other_requests.end());
  for (const auto& [kind, count] : errors)
    stats.errors_by_kind.emplace_back(std::string(to_string(kind)), count);
  if (stats.exchanges > stats.not_sent && last_end > first_send)
    stats.duration_s = static_cast<double>(last_end - first_send) / 1e9;
  if (stats.duration_s > 0) {
    stats.requests_per_s = static_cast<double>(stats.completed) / stats.duration_s;
    stats.output_tokens_per_s = static_cast<double>(stats.output_tokens) / stats.duration_s;
    stats.input_tokens_per_s = static_cast<double>(stats.input_tokens.value_or(0)) / stats.duration_s;
    stats.total_tokens_per_s = stats.input_tokens_per_s + stats.output_tokens_per_s;
  }
  fill_in_flight(metrics, stats);
  stats.ttft = percentiles(ttft);
  stats.itl = percentiles(itl);
  stats.tpot = percentiles(tpot);
  stats.e2e = percentiles(e2e);
  stats.ttft_intended = percentiles(ttft_intended);
  stats.e2e_intended = percentiles(e2e_intended);
  stats.schedule_slip = percentiles(slip);
  if (slo.any()) {
    stats.slo_met = slo_met;
    stats.goodput_per_s =
        stats.duration_s > 0 ? static_cast<double>(slo_met) / stats.duration_s : 0.0;
  }
  return stats;
}

}  // namespace retrace::replay
