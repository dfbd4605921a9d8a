// How every report shows the client's own headroom (metrics/client_usage.hpp): the JSON of one
// run's figures (replay's and stats' "client"), of one run in a summary of several (a sweep's, a
// study's), and of the summary's overall verdict; and its CSV columns. The verdict and the line a
// person reads are metrics/'s; this is only their rendering, in one place.
#pragma once

#include <string>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "metrics/client_usage.hpp"

namespace retrace::report {

// cpu_s, wall_s, cores_used, busiest_thread_share, worker_threads, cores, may_be_bottleneck.
boost::json::object client_json(const metrics::ClientUsage& client);
// Those figures with schedule_slip_p99_ms and the run's line (metrics::RunClient::line); null when
// the run did not record its client.
boost::json::value run_client_json(const metrics::RunClient& client);
// A summary's "client": its overall line, whether any run recorded figures, whether the client may
// have been the bottleneck anywhere, and where (under `where_key`: "bottleneck_concurrency",
// "bottleneck_cells", ...).
boost::json::object overall_client_json(std::string line, bool recorded, boost::json::array where,
                                        const std::string& where_key);

// A run's client as CSV columns (sweep's per level, study's per cell): cores used, the busiest
// worker thread's share, may be the bottleneck (1 or 0), schedule slip p99 ms; empty fields where
// not recorded.
extern const std::vector<std::string> kClientCsvColumns;
std::vector<std::string> client_csv_fields(const metrics::RunClient& client);

}  // namespace retrace::report
