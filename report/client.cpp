#include "report/client.hpp"

#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;

json::object client_json(const metrics::ClientUsage& client) {
  return {{"cpu_s", rounded(client.cpu_s, 6)},
          {"wall_s", rounded(client.wall_s, 6)},
          {"cores_used", rounded(client.cores_used(), 3)},
          {"busiest_thread_share", rounded(client.busiest_thread_share(), 3)},
          {"worker_threads", client.worker_threads},
          {"cores", client.cores},
          {"may_be_bottleneck", client.may_be_bottleneck()}};
}

json::value run_client_json(const metrics::RunClient& client) {
  if (!client.usage) return nullptr;
  json::object out = client_json(*client.usage);
  out["schedule_slip_p99_ms"] = client.slip_p99_ms ? json::value(rounded(*client.slip_p99_ms, 3)) : json::value(nullptr);
  out["summary"] = client.line();
  return out;
}

json::object overall_client_json(std::string line, bool recorded, json::array where, const std::string& where_key) {
  const bool anywhere = !where.empty();
  return {{"summary", std::move(line)},
          {"recorded", recorded},
          {"may_be_bottleneck", anywhere},
          {where_key, std::move(where)}};
}

const std::vector<std::string> kClientCsvColumns{"client_cores_used", "client_busiest_thread_share",
                                                 "client_may_be_bottleneck", "schedule_slip_p99_ms"};

std::vector<std::string> client_csv_fields(const metrics::RunClient& client) {
  const auto& usage = client.usage;
  return {usage ? fixed(usage->cores_used(), 3) : "", usage ? fixed(usage->busiest_thread_share(), 3) : "",
          usage ? (usage->may_be_bottleneck() ? "1" : "0") : "",
          client.slip_p99_ms ? fixed(*client.slip_p99_ms, 3) : ""};
}

}  // namespace retrace::report
