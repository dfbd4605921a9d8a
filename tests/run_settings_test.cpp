// metrics/run_settings: a run's settings to its header's JSON and back, the keys replay has always
// written, and the headers older replays wrote.
#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "metrics/run_settings.hpp"
#include "replay/replay.hpp"
#include "replay/shard.hpp"

using namespace retrace;
using namespace retrace::replay;
using namespace std::chrono_literals;

namespace {

// Every flag given, so that every member is set.
Options every_flag() {
  Options options;
  options.target = "http://127.0.0.1:8000";
  options.schedule.kind = ScheduleKind::rate;
  options.schedule.rate = 2.5;
  options.schedule.burstiness = 0.5;
  options.seed = 7;
  options.live_sessions = true;
  options.warmup = 3;
  options.limit = 40;
  options.skipped_rejected = 2;
  options.window_from = 1s;
  options.window_to = 2500ms;
  options.max_idle_gap = 500ms;
  options.sample_sessions = 0.25;
  options.requests = 30;
  options.duration = 60s;
  options.filters = {"path:/v1/*", "label:team=blue"};
  options.set = {{"temperature", "0"}, {"top_p", "1"}};
  options.unset = {"seed"};
  options.headers = {{"X-Team", "blue"}, {"Authorization", "Bearer SECRET"}};
  options.api_key_env = "MY_KEY";
  options.model = "tiny";
  options.request_deadline = 9000ms;
  options.stream = false;
  options.labels = {{"team", "blue"}};
  options.run_name = "r1";
  options.repeat_index = 2;
  options.slo.ttft = 200ms;
  options.slo.e2e = 2s;
  options.slo.ttft_tpots = 16;
  options.shard_index = 1;
  options.shard_count = 4;
  options.threads = 2;
  options.ca_file = "/etc/ca.pem";
  options.insecure = true;
  options.writer.derive_tokens = true;
  return options;
}

}  // namespace

TEST_CASE("run settings come back from their JSON as they went in") {
  RunSettings settings = run_settings(every_flag(), "in.rtrace");
  add_shard_facts(settings, {{12, 1764583200, "00ff00ff00ff00ff"}, 3, "node1", 1764583200000000000, 1500});
  metrics::ClientUsage usage;
  usage.cpu_s = 0.1234567;
  usage.wall_s = 1.5;
  usage.worker_threads = 2;
  usage.cores = 8;
  settings.client = metrics::rounded(usage);
  settings.live_tool_turns = metrics::LiveToolTurns{std::string(replay::kLiveToolTurnRule), 2, 1};
  auto back = metrics::parse_run_settings(to_json(settings));
  REQUIRE(back);
  CHECK(*back == settings);
  CHECK(back->live_tool_turns->kept_as_recorded == 1);
  CHECK(back->client->cpu_s == 0.123457);  // microseconds, as getrusage resolves them
  CHECK(back->input_identity->exchanges == 12);
  CHECK(back->start_at == "2025-12-01T10:00:00.000000000Z");
  CHECK(boost::json::value_to<RunSettings>(boost::json::value_from(settings)) == settings);
}

TEST_CASE("the settings of a run with no flags are the JSON replay has always written") {
  CHECK(to_json(run_settings(Options{})) ==
        R"({"command":"replay","target":"","schedule":{"kind":"concurrency","concurrency":1},)"
        R"("sessions":false,"session_mode":"recorded","warmup":0,"filters":[],"set":{},"unset":[],)"
        R"("headers":[],"token_ids":"off","timeout_ms":120000,"stream":true,"labels":{},"slo":{},)"
        R"("shard":"0/1","threads":0})");
}

TEST_CASE("every flag given is under the key replay has always written it") {
  auto object = boost::json::parse(to_json(run_settings(every_flag(), "in.rtrace"))).as_object();
  for (const char* key : {"input", "limit", "skipped_rejected", "window_from_ms", "window_to_ms",
                          "max_idle_gap_ms", "sample_sessions", "sample_seed", "requests", "duration_ms",
                          "api_key_env", "model", "request_deadline_ms", "run", "repeat", "ca_file", "insecure", "derive_tokens"})
    CHECK(object.contains(key));
  CHECK(object.at("schedule") == boost::json::parse(R"({"kind":"rate","rate":2.5,"arrival":"poisson","burstiness":0.5,"seed":7})"));
  CHECK(object.at("window_to_ms") == 2500.0);
  CHECK(object.at("slo") == boost::json::parse(R"({"ttft_ms":200.0,"e2e_ms":2000.0,"ttft_tpots":16.0})"));
  CHECK(object.at("headers") == boost::json::parse(R"(["X-Team: blue","Authorization: [redacted]"])"));
  CHECK(object.at("session_mode") == "live");
}

TEST_CASE("an older replay's header reads with its missing fields at their defaults and unknown keys ignored") {
  // As a replay before #29 wrote it: "max_in_flight" in the schedule, no "stream", no "threads",
  // and a key this version does not know.
  auto settings = metrics::parse_run_settings(
      R"({"command":"replay","input":"old.rtrace","target":"http://h:1","schedule":{"kind":"rate",)"
      R"("rate":4,"arrival":"gamma","burstiness":2,"seed":1,"max_in_flight":1},"sessions":false,)"
      R"("warmup":0,"filters":[],"set":{"temperature":"0"},"unset":[],"headers":[],"token_ids":"auto",)"
      R"("timeout_ms":120000,"labels":{"run":"x"},"slo":{"ttft_ms":250},"shard":"0/1",)"
      R"("some_future_key":{"a":1}})");
  REQUIRE(settings);
  CHECK(settings->input == "old.rtrace");
  REQUIRE(settings->schedule);
  CHECK(settings->schedule->rate == 4.0);  // an integer where a double is kept
  CHECK(settings->schedule->max_in_flight == 1);
  CHECK(settings->open_loop());
  CHECK(settings->set.at("temperature") == "0");
  CHECK(settings->slo.ttft_ms == 250.0);
  CHECK(settings->stream);  // absent: the default
  CHECK(settings->threads == 0);
  CHECK_FALSE(settings->client);
  CHECK_FALSE(settings->input_identity);
}

TEST_CASE("a settings field of another type or null is read as absent, not as an error") {
  auto settings = metrics::parse_run_settings(
      R"({"warmup":"ten","limit":null,"schedule":{"kind":"rate","rate":"fast"},"filters":[1],)"
      R"("client":{"cpu_s":"x","wall_s":2}})");
  REQUIRE(settings);
  CHECK(settings->warmup == 0);
  CHECK_FALSE(settings->limit);
  CHECK_FALSE(settings->schedule->rate);
  CHECK(settings->filters.empty());
  REQUIRE(settings->client);
  CHECK(settings->client->cpu_s == 0);
  CHECK(settings->client->wall_s == 2);
}

TEST_CASE("settings that are not a JSON object read as nothing set") {
  CHECK_FALSE(metrics::parse_run_settings(""));
  CHECK_FALSE(metrics::parse_run_settings("not json"));
  CHECK_FALSE(metrics::parse_run_settings("[1,2]"));
  CHECK(metrics::run_settings_of("not json") == RunSettings{});
  // A recorded trace's settings: an object of other keys.
  auto recorded = metrics::run_settings_of(R"({"upstream":"http://127.0.0.1:9000","redacted_headers":[]})");
  CHECK_FALSE(recorded.schedule);
  CHECK_FALSE(recorded.open_loop());
}
