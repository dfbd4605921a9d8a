// Study logic without traffic: the run layout, study.json, the requests every run sends, the cold
// cache's body changes, the sampling audit and cached tokens as each server reports them, the
// scope's bound, the histogram of first divergences, and the simulator's prefix cache.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>

#include <boost/json.hpp>

#include "report/html.hpp"
#include "report/study_targets.hpp"
#include "run_headers.hpp"
#include "sim/prefix_cache.hpp"
#include "sweep/study.hpp"

using namespace retrace;
using namespace retrace::sweep;

namespace {

Exchange chat(std::uint64_t id, const std::string& body) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/chat/completions";
  exchange.request.body = body;
  return exchange;
}

Plan study_plan(std::vector<double> levels, int repeats) {
  Plan plan;
  plan.trace = "/data/t.rtrace";
  plan.target = "http://127.0.0.1:1";
  plan.levels = std::move(levels);
  plan.repeats = repeats;
  return plan;
}

}  // namespace

TEST_CASE("The study runs a baseline then every cell's repeats and remembers each run's cache state") {
  Plan plan = study_plan({1, 16}, 2);
  StudySettings settings;
  plan_study(plan, settings);
  std::vector<std::string> names;
  for (const auto& run : plan.runs) names.push_back(run.name);
  CHECK(names == std::vector<std::string>{"baseline", "c1-cold-r1", "c1-cold-r2", "c1-warm-r1", "c1-warm-r2",
                                          "c16-cold-r1", "c16-cold-r2", "c16-warm-r1", "c16-warm-r2"});
  CHECK(plan.runs.front().baseline);
  CHECK(settings.run_cache.size() == plan.runs.size());
  CHECK(settings.run_cache[0] == "cold");
  CHECK(settings.run_cache[3] == "warm");
  CHECK(plan.runs[5].level == 16);
}

TEST_CASE("study.json round trips the settings a resumed study needs") {
  auto dir = std::filesystem::temp_directory_path() / ("retrace-study-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Plan plan = study_plan({4}, 1);
  StudySettings settings;
  settings.cache = {"warm", "cold"};
  settings.same_prompt = 50;
  settings.greedy = true;
  plan_study(plan, settings);
  save_study(settings, dir);
  auto loaded = load_study(dir);
  CHECK(loaded.cache == settings.cache);
  CHECK(loaded.run_cache == settings.run_cache);
  CHECK(loaded.same_prompt == std::optional<std::size_t>(50));
  CHECK(loaded.greedy);
  CHECK_FALSE(loaded.allow_sampling);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Cache states are cold or warm and listed once") {
  CHECK(parse_cache_states("cold,warm") == std::vector<std::string>{"cold", "warm"});
  CHECK(parse_cache_states("warm") == std::vector<std::string>{"warm"});
  CHECK_THROWS_WITH(parse_cache_states("cold,hot"), Catch::Contains("'hot'"));
  CHECK_THROWS_WITH(parse_cache_states("cold,cold"), Catch::Contains("twice"));
}

TEST_CASE("Every run sends the same numbered requests and same-prompt repeats the first one") {
  LoadedTrace input;
  for (std::uint64_t id = 10; id < 13; ++id)
    input.exchanges.push_back(chat(id, R"({"messages":[{"role":"user","content":"q)" + std::to_string(id) +
                                           R"("}],"temperature":0})"));
  Plan plan = study_plan({1}, 1);
  StudySettings settings;
  auto all = study_input(input, plan, settings);
  REQUIRE(all.exchanges.size() == 3);
  CHECK(all.exchanges[2].id == 2);
  CHECK(*all.exchanges[2].label("study_prompt") == "12");
  settings.same_prompt = 5;
  auto same = study_input(input, plan, settings);
  REQUIRE(same.exchanges.size() == 5);
  for (const auto& exchange : same.exchanges) CHECK(*exchange.label("study_prompt") == "10");
  CHECK(same.exchanges[4].id == 4);
}

TEST_CASE("A cold run gives every request its own cache salt or turns llama.cpp's prompt cache off") {
  LoadedTrace requests;
  requests.exchanges = {chat(0, R"({"messages":[],"temperature":0})"), chat(1, R"({"messages":[],"temperature":0})")};
  auto salted = cold_input(requests, CacheControl::salt, "run-a");
  std::set<std::string> salts;
  for (const auto& exchange : salted.exchanges) {
    auto body = boost::json::parse(exchange.request.body).as_object();
    salts.insert(std::string(body.at("cache_salt").as_string()));
  }
  CHECK(salts == std::set<std::string>{"run-a-0", "run-a-1"});
  auto llama = cold_input(requests, CacheControl::no_cache_prompt, "x");
  CHECK(boost::json::parse(llama.exchanges[0].request.body).as_object().at("cache_prompt") == false);
  CHECK(cold_input(requests, CacheControl::flush, "x").exchanges[0].request.body == requests.exchanges[0].request.body);
  CHECK(cache_control("vllm") == CacheControl::salt);
  CHECK(cache_control("sglang") == CacheControl::flush);
  CHECK(cache_control("llama.cpp") == CacheControl::no_cache_prompt);
  CHECK(cache_control("tgi") == CacheControl::none);
}

TEST_CASE("The sampling audit reads each body as sent and counts a missing temperature as the server's") {
  auto top = audit_body(R"({"temperature":0.7,"top_p":0.9,"top_k":20,"seed":3,"n":2})");
  CHECK(top.temperature == "0.7");
  CHECK(top.top_k == "20");
  CHECK(top.seed == "3");
  CHECK(top.n == "2");
  auto sglang = audit_body(R"({"text":"hi","sampling_params":{"temperature":0}})");
  CHECK(sglang.temperature == "0");
  auto none = audit_body(R"({"messages":[]})");
  CHECK_FALSE(none.temperature);
  report::SamplingAudit audit;
  count_sampling(top, audit);
  count_sampling(sglang, audit);
  count_sampling(none, audit);
  CHECK(audit.exchanges == 3);
  CHECK(audit.greedy == 1);
  CHECK(audit.sampled == 1);
  CHECK(audit.temperature_unset == 1);
  CHECK(audit.temperature["absent"] == 1);
  CHECK_FALSE(audit.all_greedy());
}

TEST_CASE("Cached tokens are read as vLLM SGLang and llama.cpp report them") {
  Exchange vllm = chat(0, "{}");
  vllm.response.body = R"({"model":"m","usage":{"prompt_tokens":40,"prompt_tokens_details":{"cached_tokens":32}}})";
  CHECK(audit_exchange(vllm).cached_tokens == 32);
  CHECK(audit_exchange(vllm).model == "m");
  Exchange sglang = chat(0, "{}");
  sglang.response.body = R"({"text":"x","meta_info":{"cached_tokens":7}})";
  CHECK(audit_exchange(sglang).cached_tokens == 7);
  Exchange llama = chat(0, "{}");
  llama.response.streamed = true;
  llama.response.events = {{0, "data: {\"model\":\"g\",\"choices\":[]}\n\n"},
                           {1, "data: {\"choices\":[],\"timings\":{\"cache_n\":0,\"prompt_n\":12}}\n\n"},
                           {2, "data: [DONE]\n\n"}};
  CHECK(audit_exchange(llama).cached_tokens == 0);
  CHECK(audit_exchange(llama).model == "g");
  Exchange silent = chat(0, "{}");
  silent.response.body = R"({"usage":{"prompt_tokens":4}})";
  CHECK_FALSE(audit_exchange(silent).cached_tokens);
}

TEST_CASE("The scope states the bound in the seed's words") {
  CHECK(report::bound_sentence(0, 60) == "0 of 60 differed: the per-request rate is at most 4.9 % (95 %), not zero");
  CHECK(report::bound_sentence(3, 60).rfind("3 of 60 differed: the per-request rate is at most ", 0) == 0);
  CHECK(report::bound_sentence(3, 60).find("not zero") == std::string::npos);
}

TEST_CASE("First divergence positions fall into power of two buckets") {
  auto buckets = report::position_histogram({0, 1, 2, 3, 4, 9, 9});
  REQUIRE(buckets.size() == 5);
  CHECK(buckets[0] == std::pair<std::string, std::size_t>{"0", 1});
  CHECK(buckets[1] == std::pair<std::string, std::size_t>{"1", 1});
  CHECK(buckets[2] == std::pair<std::string, std::size_t>{"2-3", 2});
  CHECK(buckets[3] == std::pair<std::string, std::size_t>{"4-7", 1});
  CHECK(buckets[4] == std::pair<std::string, std::size_t>{"8-15", 2});
  CHECK(report::position_histogram({}).empty());
}

TEST_CASE("The simulator's prefix cache reuses whole blocks under the same salt only") {
  sim::PrefixCache cache;
  std::vector<sim::TokenId> prompt(40);
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = sim::TokenId(i + 300);
  CHECK(cache.lookup_and_insert("", prompt) == 0);
  CHECK(cache.lookup_and_insert("", prompt) == 32);
  CHECK(cache.lookup_and_insert("salt", prompt) == 0);
  std::vector<sim::TokenId> exact(prompt.begin(), prompt.begin() + 32);
  // The last token is always computed: of a 32-token prompt only the first block is reused.
  CHECK(cache.lookup_and_insert("", exact) == 16);
  prompt[3] = 7;
  CHECK(cache.lookup_and_insert("", prompt) == 0);
}

TEST_CASE("The scope says what a cell's cache state turned out to be and never calls a cell without hits warm") {
  report::StudySummary summary;
  summary.model = "m";
  summary.server_kind = "vllm";
  summary.server_version = "0.9.1";
  summary.target = "http://h:8000";
  summary.requests = summary.prompts = 30;
  summary.concurrency = {1, 32};
  summary.cache = {"cold", "warm"};
  summary.repeats = 1;
  summary.baseline_run = "baseline";
  summary.sampling.exchanges = summary.sampling.greedy = 90;
  summary.sampling.temperature["0"] = 90;
  report::StudyCell control;
  control.name = "c1 cold";
  control.cache = "cold";
  control.control = true;
  control.cache_method = "a fresh cache_salt on every request";
  control.compared = 30;
  control.cache_figures = {30, 30, 0, 0};
  report::StudyCell warm = control;
  warm.name = "c32 warm";
  warm.cache = "warm";
  warm.control = false;
  warm.cache_method = "every request sent once first, then the measured pass";
  warm.cache_note = "no request hit the cache: this cell is not warm";
  summary.cells = {control, warm};
  auto scope = report::study_scope(summary);
  CHECK(scope.find("`m` as the server named it, served by vllm 0.9.1") != std::string::npos);
  CHECK(scope.find("this set of 30 requests (30 distinct prompts), at concurrency 1 to 32") != std::string::npos);
  CHECK(scope.find("warm (every request sent once first, then the measured pass; 0 of 30 responses reported "
                   "cached prompt tokens) — no request hit the cache: this cell is not warm") != std::string::npos);
  CHECK(scope.find("0 of 60 differed: the per-request rate is at most 4.9 % (95 %), not zero") != std::string::npos);
  CHECK(scope.find("at temperature 0 (as sent on every request)") != std::string::npos);
  CHECK(report::sampling_banner(summary).empty());
  summary.sampling.greedy = 60;
  summary.sampling.temperature_unset = 30;
  CHECK(report::sampling_banner(summary).rfind("**NOT GREEDY**: 30 of 90 requests", 0) == 0);
  CHECK(report::study_to_markdown(summary).find("nondetermin") == std::string::npos);
}

TEST_CASE("Study targets are refused when one is given twice and each gets its own directory") {
  CHECK(parse_targets({"http://a:1", "http://b:2"}) == std::vector<std::string>{"http://a:1", "http://b:2"});
  CHECK_THROWS_WITH(parse_targets({"http://a:1", "HTTP://A:1/"}), Catch::Contains("is given twice"));
  CHECK_THROWS_WITH(parse_targets({}), Catch::Contains("--target"));
  CHECK(target_dir(0) == "target-1");
  CHECK(target_dir(1) == "target-2");
}

TEST_CASE("The part that diverged first is counted under diff's name for it") {
  CHECK(report::first_part_key({}) == "unknown");
  diff::Divergence reasoning;
  reasoning.part = Part::reasoning;
  diff::Divergence content;
  content.part = Part::content;
  CHECK(report::first_part_key({reasoning, content}) == "reasoning");
  CHECK(report::first_part_key({content}) == "content");
  CHECK(report::first_parts_text({}) == "—");
  CHECK(report::first_parts_text({{"content", 1}, {"reasoning", 2}}) == "reasoning 2, content 1");
  CHECK(report::first_parts_text({{"tool_call", 1}, {"unknown", 1}, {"embedding", 0}}) == "tool_call 1, unknown 1");
}

TEST_CASE("A several target scope names every target and bounds each and the baselines across them") {
  report::StudySummary one;
  one.model = "m";
  one.server_kind = "vllm";
  one.server_version = "0.9.1";
  one.target = "http://a:8000";
  one.requests = one.prompts = 20;
  one.concurrency = {1, 16};
  one.cache = {"cold"};
  one.repeats = 2;
  one.baseline_run = "baseline";
  one.sampling.exchanges = one.sampling.greedy = 100;
  report::StudyCell cell;
  cell.name = "c1 cold";
  cell.cache = "cold";
  cell.control = true;
  cell.cache_method = "a fresh cache_salt on every request";
  cell.compared = 40;
  one.cells = {cell};
  report::StudySummary two = one;
  two.target = "http://b:8000";
  two.cells[0].differing = 3;
  two.cells[0].first_parts = {{"content", 3}};
  report::StudyTargets study;
  study.targets = {one, two};
  study.dirs = {"target-1", "target-2"};
  study.across.resize(2);
  study.across[1].compared = 20;
  study.across[1].differing = 5;
  auto scope = report::study_targets_scope(study);
  CHECK(scope.find("sent the same requests to 2 targets: target 1, `m` as the server named it, served by vllm "
                   "0.9.1 at http://a:8000, with the prompt cache cold") != std::string::npos);
  CHECK(scope.find("; target 2, `m` as the server named it, served by vllm 0.9.1 at http://b:8000") != std::string::npos);
  CHECK(scope.find("Target 2: " + report::bound_sentence(3, 40)) != std::string::npos);
  CHECK(scope.find("baseline outputs of target 2 against target 1's: " + report::bound_sentence(5, 20)) !=
        std::string::npos);
  CHECK(study.any_differs());
  auto table = report::price_table(study);
  CHECK(table.find("| target 2 (vllm 0.9.1 at http://b:8000) | c1 cold (control) |") != std::string::npos);
  CHECK(table.find("| 3 of 40 (") != std::string::npos);
  CHECK(table.find("| content 3 |") != std::string::npos);
}

namespace {

report::StudyRunFigures study_run(const std::string& cell, int repeat, bool baseline, const TraceHeader& header) {
  report::StudyRunFigures run;
  run.name = baseline ? "baseline" : cell + " r" + std::to_string(repeat);
  run.cell = cell;
  run.repeat = repeat;
  run.baseline = baseline;
  run.client = test::client_from(header);
  return run;
}

// A baseline and a control run (c1 cold: one measured client, one not), and a saturated c8 warm run.
report::StudySummary study_with_clients() {
  report::StudySummary summary;
  summary.concurrency = {1, 8};
  summary.cache = {"cold", "warm"};
  summary.baseline_run = "baseline";
  summary.runs = {study_run("c1 cold", 1, true, test::run_header(test::kIdleClient)),
                  study_run("c1 cold", 1, false, test::run_header(std::nullopt)),
                  study_run("c8 warm", 1, false, test::run_header(test::kSaturatedClient))};
  report::StudyCell control, warm;
  control.name = "c1 cold";
  control.control = true;
  control.client = summary.runs[1].client;  // the cell's only run recorded nothing
  warm.name = "c8 warm";
  warm.concurrency = 8;
  warm.client = summary.runs[2].client;
  summary.cells = {control, warm};
  return summary;
}

}  // namespace

TEST_CASE("A study states its busiest run's client and each cell's in every output") {
  using test::contains;
  auto summary = study_with_clients();
  const std::string overall = "client: busiest run (c8 warm, repeat 1) " + test::kSaturatedLine +
                              "; may have been the bottleneck at c8 warm: its figures there are the client's limit "
                              "as much as the server's; client use not recorded in 1 of 3 runs";
  CHECK(report::study_client_line(summary) == overall);

  auto markdown = report::study_to_markdown(summary);
  CHECK(contains(markdown, "\n" + overall + "\n"));
  CHECK(contains(markdown, "- c1 cold (control): client use not recorded\n"));
  CHECK(contains(markdown, "- c8 warm: " + test::kSaturatedLine + "\n"));
  CHECK(test::row_of(markdown, "| baseline (baseline) |").ends_with(" | " + test::kIdleLine + " |"));

  auto json = boost::json::parse(report::study_to_json(summary));
  CHECK(json.at("client").at("summary").as_string() == overall);
  CHECK(json.at("client").at("may_be_bottleneck").as_bool());
  CHECK(json.at("client").at("bottleneck_cells") == boost::json::array{"c8 warm"});
  CHECK(json.at("cells").at(0).at("client").is_null());
  CHECK(json.at("cells").at(1).at("client").at("may_be_bottleneck").as_bool());
  CHECK(json.at("runs").at(0).at("client").at("summary").as_string() == test::kIdleLine);
  CHECK(json.at("runs").at(0).at("client").at("cores_used").to_number<double>() == Approx(0.38));

  auto csv = report::study_to_csv(summary);
  CHECK(contains(csv, ",client_cores_used,client_busiest_thread_share,client_may_be_bottleneck,schedule_slip_p99_ms\r\n"));
  CHECK(test::row_of(csv, "c1 cold,").ends_with(",,,,\r"));
  CHECK(test::row_of(csv, "c8 warm,").ends_with(",0.950,0.900,1,\r"));

  auto html = report::study_report(summary);
  CHECK(std::find(html.paragraphs.begin(), html.paragraphs.end(), overall) != html.paragraphs.end());
  CHECK_FALSE(html.series.at(0).client.has_value());
  CHECK(html.series.at(1).client.value_or("").rfind(test::kSaturatedLine, 0) == 0);

  report::StudyTargets targets;
  targets.targets = {summary, summary};
  targets.dirs = {"target-1", "target-2"};
  targets.across.resize(2);
  CHECK(contains(report::study_targets_to_markdown(targets), "\n\n" + overall + "\n\n"));
  CHECK(contains(report::study_targets_to_json(targets), "\"bottleneck_cells\":[\"c8 warm\"]"));
}

TEST_CASE("A study whose runs did not record their client says so in one line") {
  auto summary = study_with_clients();
  for (auto& run : summary.runs) run.client = test::client_from(test::run_header(std::nullopt));
  for (auto& cell : summary.cells) cell.client = {};
  CHECK(report::study_client_line(summary) == "client use not recorded");
  auto json = boost::json::parse(report::study_to_json(summary));
  CHECK_FALSE(json.at("client").at("recorded").as_bool());
  CHECK_FALSE(json.at("client").at("may_be_bottleneck").as_bool());
  CHECK_FALSE(test::contains(report::study_to_markdown(summary), "of one core"));
}
