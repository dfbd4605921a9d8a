// The figures of a run: throughput, TTFT, inter-token latency, TPOT, end-to-end latency, goodput.
//
// Definitions (the same as vLLM's benchmark_serving where it defines one):
// - TTFT: send -> first event carrying a token; streamed responses only (a non-streamed response
//   has no first token distinct from its end, so it is not counted rather than counted wrong).
//   Reasoning tokens count: the server has started answering.
// - TTFOT (time to first output token): the same for the first token of the answer (content,
//   refusal, a tool call): what a user who is not shown the reasoning waits.
// - ITL: gaps between successive token-carrying events of choice 0, all its parts (tokens
//   coalesced into one event are one gap, as a client sees them).
// - TPOT: (end - first token) / (output tokens - 1), for streamed responses with > 1 token.
// - e2e: send -> last byte. "_intended" variants add the schedule slip (actual - intended send):
//   the latency a user arriving on schedule would have seen (wrk2's coordinated-omission fix).
// - duration: first send to last end; requests/s and tokens/s count completed exchanges only.
#include <algorithm>
#include <limits>
#include <map>

#include "metrics/stats.hpp"

#include "metrics/run_settings.hpp"

#include "format/exchange_rows.hpp"

#include "llm/llm.hpp"

namespace retrace::metrics {

namespace {

// Calls `gap` with each positive gap between choice 0's successive token offsets, in arrival
// order. Choice 0's parts are its first streams (trace.hpp's order): several are merged by it
// (and so is choice 0 among other choices, as always); an exchange of one choice is read in place.
template <class Gap>
void for_each_token_gap(const Exchange& exchange, Gap&& gap) {
  if (exchange.choices.empty()) return;
  const std::uint32_t first_index = exchange.choices.front().index;
  auto gaps_of = [&gap](const auto& items, auto offset) {  // the end and last offset in registers
    auto it = items.begin(), end = items.end();
    if (it == end) return;
    for (std::int64_t previous = offset(*it); ++it != end;) {
      std::int64_t at = offset(*it);
      if (auto g = at - previous; g > 0) gap(g);
      previous = at;
    }
  };
  if (exchange.choices.size() == 1) {
    gaps_of(exchange.choices.front().tokens, [](const Token& token) { return token.offset_ns; });
    return;
  }
  std::vector<std::int64_t> offsets;
  for (const auto& choice : exchange.choices) {
    if (choice.index != first_index) break;
    for (const auto& token : choice.tokens) offsets.push_back(token.offset_ns);
  }
  std::sort(offsets.begin(), offsets.end());
  gaps_of(offsets, [](std::int64_t offset) { return offset; });
}

// summarize() but for token_gaps_ns.
ExchangeMetrics summarize_but_gaps(const Exchange& exchange) {
  ExchangeMetrics metrics;
  metrics.error = exchange.error.kind;
  metrics.streamed = exchange.response.streamed;
  metrics.retried = exchange.retries > 0;
  metrics.intended_send_ns = exchange.intended_send_ns;
  metrics.actual_send_ns = exchange.actual_send_ns;
  metrics.end_ns = exchange.end_ns;
  const auto earliest = [](std::int64_t& first, std::int64_t offset) {
    if (first < 0 || offset < first) first = offset;
  };
  for (const auto& choice : exchange.choices) {
    if (choice.tokens.empty()) continue;
    earliest(metrics.first_token_ns, choice.tokens.front().offset_ns);
    if (choice.part != Part::reasoning) earliest(metrics.first_output_token_ns, choice.tokens.front().offset_ns);
  }
  metrics.output_tokens = output_tokens(exchange);
  metrics.reasoning_tokens = reasoning_tokens(exchange);
  metrics.input_tokens = exchange.usage.prompt_tokens;
  metrics.server_ttft_ms = exchange.server.ttft_ms;
  metrics.server_queue_ms = exchange.server.queue_ms;
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
  return metrics;
}

}  // namespace

ExchangeMetrics summarize(const Exchange& exchange) {
  ExchangeMetrics metrics = summarize_but_gaps(exchange);
  for_each_token_gap(exchange, [&](std::int64_t gap) { metrics.token_gaps_ns.push_back(gap); });
  return metrics;
}

std::optional<std::int64_t> ttft_of(const ExchangeMetrics& m) {
  if (!m.streamed || m.first_token_ns < 0) return std::nullopt;
  return m.first_token_ns;
}

std::optional<std::int64_t> ttfot_of(const ExchangeMetrics& m) {
  if (!m.streamed || m.first_output_token_ns < 0) return std::nullopt;
  return m.first_output_token_ns;
}

std::optional<double> tpot_of(const ExchangeMetrics& m) {
  if (!m.streamed || m.first_token_ns < 0 || m.output_tokens.count <= 1 ||
      m.end_ns < m.first_token_ns)
    return std::nullopt;
  return static_cast<double>(m.end_ns - m.first_token_ns) /
         static_cast<double>(m.output_tokens.count - 1);
}

bool is_open_loop(const TraceHeader& header) {
  return header.source == Source::replayed && run_settings_of(header.settings).open_loop();
}

constexpr double kMs = 1e6;

void StatsBuilder::add(ExchangeMetrics m, std::int64_t start_unix_ns) { add(m, start_unix_ns, nullptr); }

void StatsBuilder::add(const Exchange& exchange, std::int64_t start_unix_ns) {
  add(summarize_but_gaps(exchange), start_unix_ns, &exchange);
}

void StatsBuilder::add(const ExchangeMetrics& m, std::int64_t start_unix_ns, const Exchange* gaps_of) {
  ++added_;
  if (m.actual_send_ns != 0) any_offset_ = true;
  if (start_unix_ns > 0) first_start_ = std::min(first_start_, start_unix_ns);
  if (!m.inference) {
    ++other_requests_[m.endpoint];
    return;
  }
  ++stats_.exchanges;
  bool completed = m.sent && m.error == ErrorKind::none;
  auto ttft = ttft_of(m);
  auto tpot = tpot_of(m);
  if (!m.sent) {
    ++stats_.not_sent;
  } else {
    if (m.retried) ++stats_.retried;
    if (!completed) ++errors_[m.error];
  }
  if (completed) {  // the figures that do not depend on when it was sent
    tokens_.add(m.output_tokens);
    if (m.reasoning_tokens) reasoning_.add(*m.reasoning_tokens);
    if (m.input_tokens >= 0)
      stats_.input_tokens = stats_.input_tokens.value_or(0) + static_cast<std::uint64_t>(m.input_tokens);
    if (ttft) {
      ttft_.add(static_cast<double>(*ttft) / kMs);
      if (auto ttfot = ttfot_of(m)) ttfot_.add(static_cast<double>(*ttfot) / kMs);
      auto add_gap = [this](std::int64_t gap) { itl_.add(static_cast<double>(gap) / kMs); };
      if (gaps_of)  // straight from its tokens, in the order summarize() would have listed them
        for_each_token_gap(*gaps_of, add_gap);
      else
        for (auto gap : m.token_gaps_ns) add_gap(gap);
      if (tpot) tpot_.add(*tpot / kMs);
      const double client_ms = static_cast<double>(*ttft) / kMs;
      // vLLM's time_to_first_token_ms counts from scheduling (first_token_ts − scheduled_ts; its
      // queue_time_ms is scheduled_ts − queued_ts), so what the server accounts for is the two
      // together: the rest is the network, any proxy and the HTTP front.
      if (m.server_ttft_ms >= 0)
        ttft_minus_server_.add(std::max(0.0, client_ms - m.server_ttft_ms - std::max(0.0, m.server_queue_ms)));
      if (m.server_queue_ms >= 0 && client_ms > 0) queue_share_.add(std::min(100.0, 100 * m.server_queue_ms / client_ms));
    }
    if (m.end_ns >= 0) e2e_.add(static_cast<double>(m.end_ns) / kMs);
  }
  kept_.push_back({m.actual_send_ns, m.intended_send_ns, start_unix_ns, m.end_ns, ttft.value_or(-1),
                   tpot.value_or(-1), m.sent, completed});
}

Stats compute_stats(const TraceHeader& header, const std::vector<Exchange>& exchanges,
                    const Slo& slo) {
  StatsBuilder builder(is_open_loop(header), slo);
  for (const auto& exchange : exchanges) builder.add(exchange);
  auto stats = std::move(builder).finish();
  stats.client = run_settings_of(header.settings).client;
  return stats;
}

Stats compute_stats(bool open_loop, const std::vector<ExchangeMetrics>& metrics, const Slo& slo) {
  StatsBuilder builder(open_loop, slo);
  builder.reserve(metrics.size());
  for (const auto& m : metrics) builder.add(m);
  return std::move(builder).finish();
}

Stats stats_of_trace(const std::filesystem::path& path, const Slo& slo, Recovery* recovery) {
  // summarize() reads token counts, parts, arrival offsets and the request: a row's reading
  // (format/exchange_rows.hpp: no token bytes, alternatives or event data but the last; a derived
  // exchange's tokens derived without alternatives) gives it what the whole exchange gives.
  RowReader reader(path);
  StatsBuilder builder(is_open_loop(reader.header()), slo);
  Exchange exchange;
  while (reader.next(exchange)) builder.add(exchange);
  if (recovery) *recovery = reader.recovery();
  auto stats = std::move(builder).finish();
  stats.client = run_settings_of(reader.header().settings).client;
  return stats;
}

namespace {

// Whether a completed exchange met every limit of `slo`; `counted_slip` is added to its TTFT and
// end (an open loop's schedule slip, else 0). An exchange without a first token counts its end.
bool within_slo(const Slo& slo, std::int64_t ttft_ns, double tpot_ns, std::int64_t end_ns, std::int64_t counted_slip) {
  if (end_ns < 0) return false;
  if (slo.ttft && (ttft_ns >= 0 ? ttft_ns : end_ns) + counted_slip > slo.ttft->count()) return false;
  if (slo.tpot && tpot_ns >= 0 && tpot_ns > static_cast<double>(slo.tpot->count())) return false;
  if (slo.e2e && end_ns + counted_slip > slo.e2e->count()) return false;
  if (slo.ttft_tpots && (ttft_ns < 0 || tpot_ns <= 0 || double(ttft_ns + counted_slip) > *slo.ttft_tpots * tpot_ns))
    return false;
  return true;
}

// The most requests in flight at one instant, from (time, +1 send / -1 end) edges; at one time,
// ends sort first.
std::size_t peak_in_flight(std::vector<std::pair<std::int64_t, int>>& edges) {
  std::sort(edges.begin(), edges.end());
  long current = 0;
  std::size_t peak = 0;
  for (const auto& [time, step] : edges) {
    current += step;
    peak = std::max(peak, static_cast<std::size_t>(std::max(current, 0L)));
  }
  return peak;
}

}  // namespace

Stats StatsBuilder::finish() && {
  auto& stats = stats_;
  stats.open_loop = open_loop_;
  // Traces that kept only wall-clock starts (some recorders, imports): send offsets from them.
  if (!any_offset_ && added_ >= 2)
    for (auto& k : kept_)
      if (k.start_unix_ns > 0) k.actual_send_ns = k.intended_send_ns = k.start_unix_ns - first_start_;

  Distribution ttft_intended, e2e_intended, slip;
  std::int64_t first_send = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  std::size_t slo_met = 0;
  std::vector<std::pair<std::int64_t, int>> edges;  // (time, +1 send / -1 end); ends sort first
  double busy_ns = 0;
  for (const auto& k : kept_) {
    if (k.end_ns >= 0) {  // in flight from its send to its end
      edges.emplace_back(k.actual_send_ns, +1);
      edges.emplace_back(k.actual_send_ns + k.end_ns, -1);
      busy_ns += static_cast<double>(k.end_ns);
    }
    if (!k.sent) continue;
    first_send = std::min(first_send, k.actual_send_ns);
    if (k.end_ns >= 0) last_end = std::max(last_end, k.actual_send_ns + k.end_ns);
    if (!k.completed) continue;
    auto slip_ns = k.actual_send_ns - k.intended_send_ns;
    slip.add(static_cast<double>(slip_ns) / kMs);
    if (k.ttft_ns >= 0) ttft_intended.add(static_cast<double>(k.ttft_ns + slip_ns) / kMs);
    if (k.end_ns >= 0) e2e_intended.add(static_cast<double>(k.end_ns + slip_ns) / kMs);
    // Open loop: judged from the intended send, as the user on schedule experienced it.
    if (slo_.any() && within_slo(slo_, k.ttft_ns, k.tpot_ns, k.end_ns, open_loop_ ? slip_ns : 0)) ++slo_met;
  }
  std::vector<Kept>().swap(kept_);

  stats.completed = stats.exchanges - stats.not_sent;
  for (const auto& [kind, count] : errors_) {
    stats.completed -= count;
    stats.errors_by_kind.emplace_back(std::string(to_string(kind)), count);
  }
  stats.output_tokens = tokens_.total;
  stats.output_tokens_source = tokens_.source();
  if (reasoning_.exchanges > 0) {
    stats.reasoning_tokens = reasoning_.total;
    stats.reasoning_tokens_source = reasoning_.source();
  }
  stats.other_requests.assign(other_requests_.begin(), other_requests_.end());
  if (stats.exchanges > stats.not_sent && last_end > first_send)
    stats.duration_s = static_cast<double>(last_end - first_send) / 1e9;
  if (stats.duration_s > 0) {
    stats.requests_per_s = static_cast<double>(stats.completed) / stats.duration_s;
    stats.output_tokens_per_s = static_cast<double>(stats.output_tokens) / stats.duration_s;
    stats.input_tokens_per_s = static_cast<double>(stats.input_tokens.value_or(0)) / stats.duration_s;
    stats.total_tokens_per_s = stats.input_tokens_per_s + stats.output_tokens_per_s;
  }
  // Requests in flight: the most at one instant, and the time-weighted mean (Little's law).
  stats.peak_in_flight = peak_in_flight(edges);
  if (stats.duration_s > 0) stats.mean_in_flight = busy_ns / 1e9 / stats.duration_s;
  stats.ttft = std::move(ttft_).percentiles();
  stats.ttfot = std::move(ttfot_).percentiles();
  stats.ttft_minus_server = std::move(ttft_minus_server_).percentiles();
  stats.queue_share = std::move(queue_share_).percentiles();
  stats.itl = std::move(itl_).percentiles();
  stats.tpot = std::move(tpot_).percentiles();
  stats.e2e = std::move(e2e_).percentiles();
  stats.ttft_intended = std::move(ttft_intended).percentiles();
  stats.e2e_intended = std::move(e2e_intended).percentiles();
  stats.schedule_slip = std::move(slip).percentiles();
  if (slo_.any()) {
    stats.slo_met = slo_met;
    stats.goodput_per_s =
        stats.duration_s > 0 ? static_cast<double>(slo_met) / stats.duration_s : 0.0;
  }
  return std::move(stats);
}

RunClient client_of(const Stats& stats) {
  RunClient client{stats.client, std::nullopt};
  if (stats.open_loop && stats.schedule_slip.count > 0) client.slip_p99_ms = stats.schedule_slip.p99;
  return client;
}

}  // namespace retrace::metrics
