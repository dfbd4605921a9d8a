// report/: statistics, text rules, and golden files for every renderer on fixed inputs. Set
// RETRACE_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change (then read the diff).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <tuple>

#include <boost/json.hpp>

#include "report/diff_report.hpp"
#include "report/html.hpp"
#include "report/replay_report.hpp"
#include "report/request_rows.hpp"
#include "report/terminal_table.hpp"
#include "metrics/statistics.hpp"
#include "report/sweep_summary.hpp"
#include "report/text.hpp"

using namespace retrace;
using namespace retrace::report;

namespace {

const std::string kGolden = std::string(RETRACE_SOURCE_ROOT) + "/tests/golden/";

// Compares `actual` with the golden file byte for byte (or rewrites it when asked to).
void check_golden(const std::string& name, const std::string& actual) {
  std::string path = kGolden + name;
  if (std::getenv("RETRACE_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(actual == expected.str());
}

diff::TokenView token(std::string bytes, std::optional<float> logprob = std::nullopt, int id = -1) {
  diff::TokenView view;
  view.id = id;
  view.bytes = std::move(bytes);
  view.logprob = logprob;
  return view;
}

DivergenceEntry divergence(std::string run, std::uint64_t id, diff::Classification classification, double margin,
                           std::string baseline, std::string candidate) {
  DivergenceEntry entry;
  entry.level = 16;
  entry.run = std::move(run);
  entry.baseline_id = id;
  entry.key = "00112233445566778899aabbccddeeff";
  auto& d = entry.divergence;
  d.basis = diff::Basis::token_ids;
  d.baseline_index = d.candidate_index = 7;
  d.byte_offset = 31;
  d.baseline_token = token(baseline, -0.69f, 11);
  d.candidate_token = token(candidate, -0.71f, 12);
  d.baseline_token->top = {{11, baseline, -0.69f}, {12, candidate, -0.71f}, {13, " a", -3.5f}};
  d.baseline_before = {token("The"), token(" capital"), token(" is")};
  d.candidate_before = d.baseline_before;
  d.baseline_after = {token("."), token(" It")};
  d.candidate_after = {token(" and")};
  d.margin = margin;
  d.classification = classification;
  d.baseline_tokens = 10;
  d.candidate_tokens = 9;
  d.baseline_finish = d.candidate_finish = "stop";
  return entry;
}

// A fixed sweep: two levels, three repeats each, one near-tie and one real change (whose token
// carries markup, which must come out escaped).
Summary fixed_summary() {
  Summary summary;
  summary.header = {"http://127.0.0.1:8000", "retrace-sim", "concurrency 1", "gold.rtrace",
                    "2024-05-01T12:00:00Z", "0.1.0"};
  summary.trace = "gold.rtrace";
  summary.target = "http://127.0.0.1:8000";
  summary.baseline_run = "c1-r1";
  for (int concurrency : {1, 16}) {
    LevelSummary level;
    level.level = concurrency;
    level.runs = 3;
    level.requests = 20;
    level.matches_min = 18;
    level.matches_max = concurrency == 1 ? 18 : 19;
    level.differing_requests = concurrency == 1 ? 0 : 2;
    level.near_tie_requests = concurrency == 1 ? 0 : 1;
    level.unique_completions_mean = concurrency == 1 ? 1 : 1.1;
    level.unique_completions_max = concurrency == 1 ? 1 : 2;
    level.requests_per_s = spread_of(concurrency == 1 ? std::vector<double>{10.5, 11.0, 10.75}
                                                      : std::vector<double>{80.25, 84.5, 82.0});
    level.output_tokens_per_s = spread_of({level.requests_per_s.mean * 12, level.requests_per_s.max * 12});
    level.ttft.p50 = 12.5 * concurrency;
    level.ttft.p99 = 20.25 * concurrency;
    level.e2e.p50 = 95.5 * concurrency;
    level.e2e.p99 = 140.0 * concurrency;
    level.ttft.count = level.e2e.count = 60;
    std::vector<double> ttft, itl, e2e;
    for (int i = 0; i < 10; ++i) {
      ttft.push_back((10 + i) * concurrency * 0.5);
      itl.push_back(2 + i * 0.25);
      e2e.push_back((80 + 3 * i) * concurrency * 0.5);
    }
    level.latency = {replay::percentiles(ttft), replay::percentiles(itl), replay::percentiles(e2e)};
    if (concurrency == 16) level.errors_by_kind = {{"timeout", 1}};
    level.errors = concurrency == 16 ? 1 : 0;
    summary.levels.push_back(level);
  }
  RunFigures run;
  run.name = "c16-r1";
  run.file = "c16-r1.rtrace";
  run.level = 16;
  run.exchanges = 20;
  run.requests_per_s = 80.25;
  run.output_tokens_per_s = 963;
  run.identical = 18;
  run.divergent = 2;
  run.near_ties = 1;
  run.real_changes = 1;
  run.matches_expected = 19;
  run.failed = {{4, "Paris", "<b>Lyon</b>"}};
  summary.runs.push_back(run);
  summary.divergences.push_back(divergence("c16-r1", 3, diff::Classification::near_tie, 0.02, " Paris", " Lyon"));
  summary.divergences.push_back(
      divergence("c16-r2", 9, diff::Classification::real_change, 1.25, " <script>alert(1)</script>", " 42"));
  summary.errors = 1;
  return summary;
}

}  // namespace

TEST_CASE("The Clopper-Pearson bound is about three over n when nothing differs") {
  CHECK(*clopper_pearson_upper(0, 60) == Approx(0.0487029).epsilon(1e-5));
  CHECK(*clopper_pearson_upper(1, 20) == Approx(0.2161062).epsilon(1e-5));
  CHECK(*clopper_pearson_upper(3, 100) == Approx(0.0757108).epsilon(1e-5));
  CHECK(*clopper_pearson_upper(5, 5) == 1.0);
  CHECK_FALSE(clopper_pearson_upper(0, 0).has_value());
  CHECK(rate_bound_text(0, 60) == "≤ 4.9 %");
  CHECK(rate_bound_text(0, 1000) == "≤ 0.30 %");
  // Below 1 %, two significant digits: 0 of 200,000 is not "≤ 0.00 %".
  CHECK(rate_bound_text(0, 200000) == "≤ 0.0015 %");
  CHECK(rate_bound_text(3, 200000) == "≤ 0.0039 %");
  CHECK(rate_percent_text(0.0015, 2) == "0.0015");
  CHECK(rate_percent_text(13.93, 2) == "13.93");
}

TEST_CASE("Throughput across repeats gets a Student t interval of its mean") {
  auto spread = spread_of({90, 100, 110});
  CHECK(spread.mean == Approx(100));
  CHECK(spread.stddev == Approx(10));
  CHECK(spread.spread_percent == Approx(20));
  // 100 ± t(0.975, 2) · 10 / √3
  CHECK(*spread.ci_low == Approx(100 - 4.30265273 * 10 / std::sqrt(3.0)));
  CHECK(*spread.ci_high == Approx(100 + 4.30265273 * 10 / std::sqrt(3.0)));
  CHECK_FALSE(spread_of({42}).ci_low.has_value());
  CHECK(student_t_95(100) == Approx(1.984).margin(1e-3));
}

TEST_CASE("The Clopper-Pearson bound matches its closed forms at no and at all but one difference") {
  // k = 0: P(X = 0) = (1 - p)^n = alpha.  k = n - 1: P(X <= n - 1) = 1 - p^n = alpha.
  CHECK(*clopper_pearson_upper(0, 1000) == Approx(1 - std::pow(0.05, 1.0 / 1000)).epsilon(1e-9));
  CHECK(*clopper_pearson_upper(0, 100, 0.99) == Approx(1 - std::pow(0.01, 1.0 / 100)).epsilon(1e-9));
  CHECK(*clopper_pearson_upper(19, 20) == Approx(std::pow(0.95, 1.0 / 20)).epsilon(1e-9));
  // Large n: the Poisson bound, chi-square(0.95, 2k + 2) / 2n.
  CHECK(*clopper_pearson_upper(7, 1'000'000) == Approx(26.2962 / 2 / 1e6).epsilon(1e-4));
}

TEST_CASE("Student t quantiles match the published table to six digits") {
  CHECK(student_t_95(1) == Approx(12.7062047).epsilon(1e-7));
  CHECK(student_t_95(2) == Approx(4.30265273).epsilon(1e-7));
  CHECK(student_t_95(5) == Approx(2.57058184).epsilon(1e-7));
  CHECK(student_t_95(10) == Approx(2.22813885).epsilon(1e-7));
  CHECK(student_t_95(30) == Approx(2.04227246).epsilon(1e-7));
  CHECK(student_t_95(40) == Approx(2.02107539).epsilon(1e-7));
  CHECK(student_t_95(120) == Approx(1.97993041).epsilon(1e-7));
  CHECK(student_t_95(0) == 0);
}

TEST_CASE("JSON numbers are plain decimals and absent values are null") {
  boost::json::object object{{"near_tie", 5e-2},
                             {"duration_s", 7.909090472},
                             {"big", 1e20},
                             {"tiny", 1.5e-7},
                             {"nan", std::numeric_limits<double>::quiet_NaN()},
                             {"count", 3},
                             {"nested", boost::json::array{0.25, nullptr}}};
  CHECK(json_text(object) ==
        R"({"near_tie":0.05,"duration_s":7.909090472,"big":100000000000000000000,"tiny":0.00000015,)"
        R"("nan":null,"count":3,"nested":[0.25,null]})");
  CHECK(boost::json::parse(json_text(object)).at("tiny").as_double() == 1.5e-7);
}

TEST_CASE("Every number in the sweep JSON is a plain decimal") {
  auto json = summary_to_json(fixed_summary());
  // Outside strings, no number has an exponent.
  std::string outside;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    if (in_string && json[i] == '\\') { ++i; continue; }
    if (json[i] == '"') in_string = !in_string;
    else if (!in_string) outside += json[i];
  }
  CHECK_FALSE(std::regex_search(outside, std::regex("[0-9][eE][-+]?[0-9]")));
  CHECK(json.find("\"schema_version\":") != std::string::npos);
}

TEST_CASE("HTML escaping covers markup and both quote kinds") {
  CHECK(html_escape("<a href=\"x\" title='y'>&</a>") == "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,\"b\"") == "\"a,\"\"b\"\"\"");
}

TEST_CASE("A CSV cell that opens like a formula is prefixed so a spreadsheet shows it as text") {
  CHECK(csv_field("=HYPERLINK(\"http://x\")") == "\"'=HYPERLINK(\"\"http://x\"\")\"");
  CHECK(csv_field("+cmd") == "'+cmd");
  CHECK(csv_field("-2+3") == "'-2+3");
  CHECK(csv_field("@SUM(A1)") == "'@SUM(A1)");
  CHECK(csv_field("\tx") == "'\tx");
  CHECK(csv_field("-1.5") == "-1.5");
  CHECK(csv_field("+3") == "+3");
  CHECK(csv_field("-2e-05") == "-2e-05");
  CHECK(csv_row({"=1+1", "a=b"}) == "'=1+1,a=b\r\n");
}

TEST_CASE("The sweep summary renders to its golden Markdown JSON and CSV") {
  check_golden("sweep_summary.md", summary_to_markdown(fixed_summary()));
  check_golden("sweep_summary.json", summary_to_json(fixed_summary()));
  check_golden("sweep_summary.csv", summary_to_csv(fixed_summary()));
}

TEST_CASE("The sweep HTML report renders to its golden file") {
  auto report = sweep_report(fixed_summary());
  report.generator = "test";
  check_golden("sweep_report.html", render_html(report));
}

TEST_CASE("The HTML report lists real changes before near-ties and escapes trace text") {
  auto report = sweep_report(fixed_summary());
  auto html = render_html(report);
  auto real = html.find("data-class=\"real-change\"");
  auto near = html.find("data-class=\"near-tie\"");
  REQUIRE(real != std::string::npos);
  REQUIRE(near != std::string::npos);
  CHECK(real < near);
  CHECK(html.find("<script>alert(1)") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("&lt;b&gt;Lyon&lt;/b&gt;") != std::string::npos);
  // Exactly one script element: the page's own.
  std::size_t scripts = 0;
  for (auto at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1)) ++scripts;
  CHECK(scripts == 1);
}

TEST_CASE("Markdown lists real changes before near-ties with the bound beside each count") {
  auto markdown = summary_to_markdown(fixed_summary());
  CHECK(markdown.find("real change") < markdown.find("— near-tie"));
  CHECK(markdown.find("2 of 20 (≤ 28.3 %; 1 near-ties)") != std::string::npos);
  CHECK(markdown.find("0 of 20 (≤ 13.9 %)") != std::string::npos);
  CHECK(markdown.find("95% CI") != std::string::npos);
}

namespace {

// Four requests at concurrency 2 on a fixed clock: three streamed (one of them with a second
// choice-0 gap), one failed; three reported their prompt tokens.
replay::Stats fixed_stats(bool open_loop) {
  auto request = [](std::int64_t send, std::int64_t first_token, std::int64_t end,
                    std::vector<std::int64_t> gaps, std::int64_t output_tokens,
                    std::int64_t input_tokens) {
    replay::ExchangeMetrics m;
    m.streamed = true;
    m.intended_send_ns = send;
    m.actual_send_ns = send + 1'500'000;  // 1.5 ms of schedule slip each
    m.first_token_ns = first_token;
    m.end_ns = end;
    m.token_gaps_ns = std::move(gaps);
    m.output_tokens = {output_tokens, true};
    m.input_tokens = input_tokens;
    return m;
  };
  std::vector<replay::ExchangeMetrics> metrics{
      request(0, 20'000'000, 100'000'000, {40'000'000, 40'000'000}, 3, 12),
      request(10'000'000, 25'000'000, 150'000'000, {60'000'000, 65'000'000}, 3, 20),
      request(110'000'000, 30'000'000, 90'000'000, {60'000'000}, 2, -1)};
  replay::ExchangeMetrics failed;
  failed.error = ErrorKind::connect;
  failed.actual_send_ns = 120'000'000;
  failed.end_ns = 5'000'000;
  metrics.push_back(failed);
  replay::Slo slo;
  slo.ttft = std::chrono::milliseconds(24);
  return replay::compute_stats(open_loop, metrics, slo);
}

StatsContext fixed_context() {
  StatsContext context;
  context.title = "run.rtrace";
  context.header = ReportHeader{"http://127.0.0.1:8000", "tiny-model", "rate 5/s poisson",
                                "prod.rtrace", "2024-05-01T12:00:00Z", "0.1.0"};
  return context;
}

}  // namespace

TEST_CASE("The stats report renders to its golden text Markdown and JSON") {
  auto stats = fixed_stats(true);
  // The client's headroom, as a replay measures it (metrics/client_usage.hpp).
  stats.client = metrics::ClientUsage{0.076, 0.2, 0.05, 2, 2};
  auto context = fixed_context();
  check_golden("stats.txt", render_stats_text(stats, context));
  check_golden("stats.md", render_stats_markdown(stats, context));
  check_golden("stats.json", render_stats_json(stats, context) + "\n");
}

TEST_CASE("A terminal too narrow for the latency table gets one figure per line") {
  auto context = fixed_context();
  context.width = 60;
  context.percentiles = {50, 99.9};
  auto text = render_stats_text(fixed_stats(false), context);
  check_golden("stats_narrow.txt", text);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find("server ") == std::string::npos) CHECK(line.size() <= 60);
}

TEST_CASE("The stats figures count input tokens throughput and requests in flight") {
  auto stats = fixed_stats(false);
  REQUIRE(stats.input_tokens);
  CHECK(*stats.input_tokens == 32);
  CHECK(stats.output_tokens == 8);
  CHECK(stats.total_tokens_per_s == Approx(stats.input_tokens_per_s + stats.output_tokens_per_s));
  // Sends at 1.5, 11.5, 111.5 and 120 ms; ends at 101.5, 161.5, 201.5 and 125 ms.
  CHECK(stats.peak_in_flight == 3);
  CHECK(stats.duration_s == Approx(0.2));
  CHECK(stats.mean_in_flight == Approx((100 + 150 + 90 + 5) / 200.0));
  CHECK(stats.e2e.stddev == Approx(32.1455).epsilon(1e-4));
  CHECK(stats.itl.at(50) == 60);
  CHECK(stats.itl.at(95) == 65);
}

TEST_CASE("Percentile lists parse strictly and name their columns") {
  CHECK(parse_percentiles("50,90,95,99.9") == std::vector<double>{50, 90, 95, 99.9});
  CHECK(percentile_name(99.9) == "p99.9");
  CHECK(percentile_name(50) == "p50");
  CHECK_THROWS_AS(parse_percentiles("50,,99"), std::invalid_argument);
  CHECK_THROWS_AS(parse_percentiles("0"), std::invalid_argument);
  CHECK_THROWS_AS(parse_percentiles("101"), std::invalid_argument);
  CHECK_THROWS_AS(parse_percentiles("p99"), std::invalid_argument);
}

TEST_CASE("A request row is RFC 4180 CSV with empty fields for what is absent") {
  Exchange exchange;
  exchange.id = 7;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = R"({"prompt":"Say \"hi\", twice\nplease"})";
  exchange.response.status = 200;
  exchange.actual_send_ns = exchange.intended_send_ns = 2'000'000;
  exchange.end_ns = 12'345'678;
  exchange.usage.completion_tokens = 2;
  Choice choice;
  choice.finish_reason = "stop";
  Token hi;
  hi.bytes = "hi,";
  Token again;
  again.bytes = " hi";
  choice.tokens = {hi, again};
  exchange.choices.push_back(choice);
  RequestRowOptions options;
  options.with_text = true;
  check_golden("request_rows.csv",
               request_rows_header(options) + request_row("run, 1.rtrace", exchange, options));
}

TEST_CASE("Markdown tables become aligned columns on a terminal and blocks when too narrow") {
  std::string markdown = "# Sweep\n\n| level | req/s | bound |\n|---|--:|---|\n| 1 | 10.5 | ≤ 5.0 % |\n"
                         "| 16 | 120.25 | ≤ 13.9 % |\n\ntext after\n";
  CHECK(markdown_for_terminal(markdown, 0) ==
        "# Sweep\n\nlevel  req/s   bound\n1      10.5    ≤ 5.0 %\n16     120.25  ≤ 13.9 %\n\ntext after\n");
  CHECK(markdown_for_terminal(markdown, 20) ==
        "# Sweep\n\nlevel  1\n  req/s  10.5\n  bound  ≤ 5.0 %\n\nlevel  16\n  req/s  120.25\n"
        "  bound  ≤ 13.9 %\n\ntext after\n");
  check_golden("sweep_summary_terminal.txt", markdown_for_terminal(summary_to_markdown(fixed_summary()), 0));
}

namespace {

// A fixed diff: a baseline of four exchanges against one candidate run, with one real change, one
// near-tie, gold answers matched by three of four, and a candidate-side token without an id.
diff::Result fixed_diff() {
  diff::Result result;
  result.baseline_name = "base.rtrace";
  result.baseline_exchanges = 4;
  result.baseline_matches_expected = 4;
  result.baseline_with_expected = 4;
  diff::RunComparison run;
  run.name = "run, 2.rtrace";
  run.exchanges = run.aligned = 4;
  run.identical = 2;
  run.divergent = 2;
  run.near_ties = run.real_changes = 1;
  run.matches_expected = 3;
  run.with_expected = 4;
  run.failing_expected = {3};
  run.matrix = "..DD";
  for (auto [id, classification, margin] :
       {std::tuple{2, diff::Classification::near_tie, 0.02}, std::tuple{3, diff::Classification::real_change, 1.25}}) {
    diff::PairResult pair;
    pair.baseline_id = pair.candidate_id = static_cast<std::uint64_t>(id);
    pair.baseline_position = pair.candidate_position = static_cast<std::size_t>(id);
    pair.key = RequestKey{0x0011223344556677, static_cast<std::uint64_t>(id)};
    pair.verdict = diff::Verdict::divergent;
    auto entry = divergence("run", static_cast<std::uint64_t>(id), classification, margin, " Paris", " Lyon");
    entry.divergence.candidate_token->id = -1;
    pair.divergences.push_back(entry.divergence);
    run.pairs.push_back(pair);
  }
  result.runs.push_back(run);
  result.unique_completions_histogram = {{1, 2}, {2, 2}};
  result.first_divergence_positions = {7, 7};
  return result;
}

}  // namespace

TEST_CASE("The diff renders to its golden terminal text Markdown JSON and CSV") {
  DiffRenderOptions options;
  options.expect = true;
  std::ostringstream terminal, markdown, json, csv;
  render_diff_terminal(fixed_diff(), options, terminal);
  check_golden("diff.txt", terminal.str());
  render_diff_markdown(fixed_diff(), options, markdown);
  render_diff_json(fixed_diff(), options, json);
  render_diff_csv(fixed_diff(), csv);
  check_golden("diff.md", markdown.str());
  check_golden("diff.json", json.str());
  check_golden("diff.csv", csv.str());
  CHECK(json.str().find("\"id\":-1") == std::string::npos);  // an absent token id is null
}
