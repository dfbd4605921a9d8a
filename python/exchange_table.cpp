// Trace.exchanges(): one row per exchange, its columns filled as the trace streams by (one
// exchange in memory at a time) and handed to pandas at the end. The figures are metrics/'s
// (summarize: TTFT, TPOT, the inter-token gaps, output tokens as `stats` counts them), the
// sampling as sent and the cached tokens sweep/'s study audit (what `study` reads of a body and
// a response, sweep::AuditReader); nothing here defines a figure of its own.
#include "python/tables.hpp"
#include "python/audit_reader.hpp"

#include "format/exchange_rows.hpp"
#include "metrics/distribution.hpp"
#include "metrics/stats.hpp"

namespace retrace::python {

namespace {

constexpr double kMs = 1e6;

double ms_or_nan(std::optional<double> ns) { return ns ? *ns / kMs : kNaN; }
std::optional<std::int64_t> known(std::int64_t value) {
  return value < 0 ? std::nullopt : std::optional<std::int64_t>(value);
}

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

struct ExchangeColumns {
  NumberColumn<std::uint64_t> id;
  NullableColumn source_id;
  KeyTextColumn request_key;
  CategoryColumn session, method, endpoint, dialect, error_kind, finish_reason;
  TextColumn error_message, decode_note;
  NullableColumn status;
  NumberColumn<std::uint8_t> streamed, inference;
  NumberColumn<std::int64_t> start_unix_ns;
  NumberColumn<double> send_ms, intended_send_ms;
  NumberColumn<double> temperature, top_p;
  NullableColumn top_k, seed, n;
  NullableColumn prompt_tokens, output_tokens, reasoning_tokens, cached_tokens;
  NumberColumn<std::uint8_t> output_tokens_from_usage;
  NumberColumn<double> ttft_ms, ttfot_ms, tpot_ms, e2e_ms, itl_p50_ms, itl_p99_ms;
  NumberColumn<std::uint32_t> events, retries;
  NullableColumn in_flight_at_send, in_flight_max;

  sweep::AuditReader audit;

  void add(const Exchange& exchange, std::vector<double>& gaps);
  py::object frame() &&;
};

void ExchangeColumns::add(const Exchange& exchange, std::vector<double>& gaps) {
  const metrics::ExchangeMetrics figures = metrics::summarize(exchange);
  const bool failed = exchange.error.kind != ErrorKind::none;
  id.push(exchange.id);
  source_id.push(exchange.source_id ? std::optional<std::int64_t>(static_cast<std::int64_t>(*exchange.source_id))
                                    : std::nullopt);
  request_key.push(exchange.key.hi, exchange.key.lo);
  session.push(exchange.session_id);
  method.push(exchange.request.method);
  endpoint.push(path_of(exchange.request.target));
  dialect.push(exchange.dialect);
  error_kind.push(to_string(exchange.error.kind));
  if (failed) error_message.push(exchange.error.message);
  else error_message.push_absent();
  if (exchange.decode_note.empty()) decode_note.push_absent();
  else decode_note.push(exchange.decode_note);
  status.push(exchange.response.status ? std::optional<std::int64_t>(exchange.response.status) : std::nullopt);
  streamed.push(exchange.response.streamed);
  inference.push(figures.inference);
  if (exchange.choices.empty()) finish_reason.push_absent();
  else finish_reason.push(exchange.choices.front().finish_reason);
  start_unix_ns.push(exchange.start_unix_ns);
  send_ms.push(static_cast<double>(exchange.actual_send_ns) / kMs);
  intended_send_ms.push(static_cast<double>(exchange.intended_send_ns) / kMs);

  const SamplingAsSent sampling = sampling_as_sent(audit.sampling(exchange.request.body));
  temperature.push(sampling.temperature);
  top_p.push(sampling.top_p);
  top_k.push(sampling.top_k);
  seed.push(sampling.seed);
  n.push(sampling.n);
  cached_tokens.push(audit.cached_tokens(exchange));

  prompt_tokens.push(known(figures.input_tokens));
  output_tokens.push(failed || !figures.sent ? std::nullopt : std::optional<std::int64_t>(figures.output_tokens.count));
  output_tokens_from_usage.push(figures.output_tokens.from_usage);
  reasoning_tokens.push(figures.reasoning_tokens ? std::optional<std::int64_t>(figures.reasoning_tokens->count)
                                                 : std::nullopt);
  auto ttft = metrics::ttft_of(figures);
  auto ttfot = metrics::ttfot_of(figures);
  ttft_ms.push(ttft ? static_cast<double>(*ttft) / kMs : kNaN);
  ttfot_ms.push(ttfot ? static_cast<double>(*ttfot) / kMs : kNaN);
  tpot_ms.push(ms_or_nan(metrics::tpot_of(figures)));
  e2e_ms.push(exchange.end_ns >= 0 ? static_cast<double>(exchange.end_ns) / kMs : kNaN);
  gaps.clear();
  for (std::int64_t gap : figures.token_gaps_ns) gaps.push_back(static_cast<double>(gap) / kMs);
  if (gaps.empty()) {
    itl_p50_ms.push(kNaN);
    itl_p99_ms.push(kNaN);
  } else {
    metrics::Percentiles itl = metrics::percentiles(gaps);
    itl_p50_ms.push(itl.p50);
    itl_p99_ms.push(itl.p99);
    gaps = std::move(itl.sorted);
  }
  events.push(static_cast<std::uint32_t>(exchange.response.events.size()));
  retries.push(exchange.retries);
  in_flight_at_send.push(known(exchange.in_flight_at_send));
  in_flight_max.push(known(exchange.in_flight_max));
}

py::object ExchangeColumns::frame() && {
  Table table;
  table.add("id", std::move(id.values));
  table.add("source_id", std::move(source_id));
  table.add("request_key", std::move(request_key),
            [](std::uint64_t hi, std::uint64_t lo) { return RequestKey{hi, lo}.hex(); });
  table.add("session", std::move(session));
  table.add("method", std::move(method));
  table.add("endpoint", std::move(endpoint));
  table.add("dialect", std::move(dialect));
  table.add("status", std::move(status));
  table.add("error_kind", std::move(error_kind));
  table.add("error_message", std::move(error_message));
  table.add_bool("streamed", std::move(streamed.values));
  table.add_bool("inference", std::move(inference.values));
  table.add("finish_reason", std::move(finish_reason));
  table.add_time("start", std::move(start_unix_ns.values));
  table.add("send_ms", std::move(send_ms.values));
  table.add("intended_send_ms", std::move(intended_send_ms.values));
  table.add("temperature", std::move(temperature.values));
  table.add("top_p", std::move(top_p.values));
  table.add("top_k", std::move(top_k));
  table.add("seed", std::move(seed));
  table.add("n", std::move(n));
  table.add("prompt_tokens", std::move(prompt_tokens));
  table.add("output_tokens", std::move(output_tokens));
  table.add_bool("output_tokens_from_usage", std::move(output_tokens_from_usage.values));
  table.add("reasoning_tokens", std::move(reasoning_tokens));
  table.add("cached_tokens", std::move(cached_tokens));
  table.add("ttft_ms", std::move(ttft_ms.values));
  table.add("ttfot_ms", std::move(ttfot_ms.values));
  table.add("tpot_ms", std::move(tpot_ms.values));
  table.add("e2e_ms", std::move(e2e_ms.values));
  table.add("itl_p50_ms", std::move(itl_p50_ms.values));
  table.add("itl_p99_ms", std::move(itl_p99_ms.values));
  table.add("events", std::move(events.values));
  table.add("retries", std::move(retries.values));
  table.add("in_flight_at_send", std::move(in_flight_at_send));
  table.add("in_flight_max", std::move(in_flight_max));
  table.add("decode_note", std::move(decode_note));
  return table.frame();
}

}  // namespace

py::object exchanges_table(const std::filesystem::path& path, Warnings& warnings) {
  ExchangeColumns columns;
  {
    py::gil_scoped_release unlocked;
    RowReader reader(path);  // what a row shows, not every token's and event's strings
    Exchange exchange;
    std::vector<double> gaps;
    while (reader.next(exchange)) columns.add(exchange, gaps);
    warnings.add(path, reader.recovery());
  }
  return std::move(columns).frame();
}

}  // namespace retrace::python
