#include "report/request_rows.hpp"

#include "format/json.hpp"
#include "metrics/stats.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace {

constexpr double kMs = 1e6;

std::string ms(double ns) { return fixed(ns / kMs, 3); }

std::string count_or_empty(std::int64_t value) { return value < 0 ? "" : std::to_string(value); }

}  // namespace

std::string request_rows_header(const RequestRowOptions& options) {
  std::vector<std::string> names{"trace",         "id",           "source_id",     "session_id",
                                 "status",        "error",        "streamed",      "finish_reason",
                                 "input_tokens",  "output_tokens", "send_ms",      "intended_send_ms",
                                 "ttft_ms",       "tpot_ms",      "itl_mean_ms",   "e2e_ms"};
  if (options.with_text) names.insert(names.end(), {"request", "output"});
  return csv_row(names);
}

std::string request_row(std::string_view trace, const Exchange& exchange,
                        const RequestRowOptions& options) {
  auto metrics = metrics::summarize(exchange);
  auto ttft = metrics::ttft_of(metrics);
  auto tpot = metrics::tpot_of(metrics);
  std::string itl_mean;
  if (!metrics.token_gaps_ns.empty()) {
    double sum = 0;
    for (auto gap : metrics.token_gaps_ns) sum += static_cast<double>(gap);
    itl_mean = ms(sum / static_cast<double>(metrics.token_gaps_ns.size()));
  }
  bool failed = exchange.error.kind != ErrorKind::none;
  std::vector<std::string> fields{
      std::string(trace),
      std::to_string(exchange.id),
      exchange.source_id ? std::to_string(*exchange.source_id) : "",
      exchange.session_id,
      exchange.response.status ? std::to_string(exchange.response.status) : "",
      failed ? std::string(to_string(exchange.error.kind)) : "",
      exchange.response.streamed ? "true" : "false",
      exchange.choices.empty() ? "" : exchange.choices.front().finish_reason,
      count_or_empty(metrics.input_tokens),
      failed ? "" : std::to_string(metrics.output_tokens.count),
      ms(static_cast<double>(exchange.actual_send_ns)),
      ms(static_cast<double>(exchange.intended_send_ns)),
      ttft ? ms(static_cast<double>(*ttft)) : "",
      tpot ? ms(*tpot) : "",
      itl_mean,
      exchange.end_ns >= 0 ? ms(static_cast<double>(exchange.end_ns)) : ""};
  if (options.with_text) {
    fields.push_back(request_summary(exchange.request, 1'000'000));
    const Choice* answer = first_answer(exchange.choices);
    fields.push_back(answer ? output_text(*answer) : "");
  }
  return csv_row(fields);
}

Recovery write_request_rows(const std::string& path, std::ostream& out,
                            const RequestRowOptions& options) {
  TraceReader reader(path);
  if (options.header_row) out << request_rows_header(options);
  Exchange exchange;
  while (out && reader.next(exchange)) out << request_row(path, exchange, options);
  out.flush();
  return reader.recovery();
}

}  // namespace retrace::report
