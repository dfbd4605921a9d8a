// report/: what the summaries gather one exchange at a time (report/streamed_figures.cpp) and the
// lists a page caps: the most severe divergences, failed questions, bounded latency distributions.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "report/html.hpp"
#include "report/sweep_summary.hpp"
#include "report/text.hpp"

using namespace retrace;
using namespace retrace::report;

namespace {

DivergenceEntry entry_of(std::uint64_t id, diff::Classification classification) {
  DivergenceEntry entry;
  entry.run = "c8-r1";
  entry.baseline_id = id;
  entry.key = "00112233445566778899aabbccddeeff";
  entry.divergence.classification = classification;
  return entry;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

Exchange answered(std::uint64_t id, std::string expected, std::string output) {
  Exchange exchange;
  exchange.id = id;
  exchange.expected = std::move(expected);
  Choice choice;
  choice.tokens.push_back({});
  choice.tokens.back().bytes = std::move(output);
  exchange.choices.push_back(choice);
  return exchange;
}

}  // namespace

TEST_CASE("Counts are written with their thousands separated") {
  CHECK(thousands(0) == "0");
  CHECK(thousands(999) == "999");
  CHECK(thousands(1000) == "1,000");
  CHECK(thousands(49980) == "49,980");
  CHECK(thousands(1234567) == "1,234,567");
}

TEST_CASE("The most severe divergences picked as they come are the first of the whole list ordered") {
  std::mt19937 random(28);
  for (std::size_t at_most : {0, 1, 5, 100}) {
    std::vector<DivergenceEntry> entries;
    for (std::uint64_t id = 0; id < 300; ++id)
      entries.push_back(entry_of(id, static_cast<diff::Classification>(random() % 3)));
    auto ordered = entries;
    order_by_severity(ordered);
    ordered.resize(std::min(ordered.size(), at_most));
    auto picked = most_severe(entries, at_most);
    REQUIRE(picked.size() == ordered.size());
    for (std::size_t i = 0; i < picked.size(); ++i) CHECK(picked[i].baseline_id == ordered[i].baseline_id);
  }
}

TEST_CASE("A page shows the first hundred divergences real changes first and counts the rest") {
  HtmlReport report;
  report.kind = "diff";
  MostSevere picker(kShownDivergences);
  for (std::uint64_t id = 0; id < 1000; ++id)
    picker.add(entry_of(id, id % 10 == 3 ? diff::Classification::real_change : diff::Classification::near_tie));
  report.divergences_left_out = picker.seen();
  report.divergences = std::move(picker).take();
  report.divergences_left_out -= report.divergences.size();
  CHECK(report.divergences.size() == kShownDivergences);
  auto html = render_html(report);
  CHECK(html.find("Divergent outputs (1000)") != std::string::npos);
  CHECK(occurrences(html, "<article class=\"divergence\"") == kShownDivergences);
  CHECK(occurrences(html, "data-class=\"real-change\"") == 100);  // all 100 real changes come first
  CHECK(html.find("… and 900 more") != std::string::npos);
}

TEST_CASE("Failed questions keep the first few whole and count the others") {
  FailedQuestions questions(diff::Options{}, kShownFailedQuestions);
  for (std::uint64_t id = 0; id < 50000; ++id)
    questions.add(answered(id, "Paris", id % 5 == 0 ? "Paris" : "Lyon " + std::to_string(id)));
  questions.add(Exchange{});  // no expected answer: not a question
  CHECK(questions.with_expected() == 50000);
  CHECK(questions.failed() == 40000);
  REQUIRE(questions.kept().size() == kShownFailedQuestions);
  CHECK(questions.kept().front().id == 1);
  CHECK(questions.kept().front().output == "Lyon 1");
  CHECK(questions.left_out() == 40000 - kShownFailedQuestions);

  HtmlReport report;
  report.gold.push_back({"run.rtrace", 10000, 50000, questions.kept(), questions.left_out()});
  auto html = render_html(report);
  CHECK(occurrences(html, "<div class=\"failed\">") == kShownFailedQuestions);
  CHECK(html.find("… and 39,980 more") != std::string::npos);
  CHECK(html.find("10000 of 50000") != std::string::npos);
}

TEST_CASE("A latency chart past the exact limit is drawn from the histogram within its error") {
  // The same samples kept exactly and counted in a histogram draw the same CDF to within the
  // histogram's relative error at every point.
  metrics::Distribution exact, counted(1000);
  std::mt19937 random(7);
  std::exponential_distribution<double> latency(1.0 / 40);
  for (int i = 0; i < 20000; ++i) {
    double ms = 1 + latency(random);
    exact.add(ms);
    counted.add(ms);
  }
  REQUIRE(exact.exact());
  REQUIRE_FALSE(counted.exact());
  auto a = std::move(exact).percentiles();
  auto b = std::move(counted).percentiles();
  CHECK(b.sorted.empty());
  for (std::size_t rank : {1, 2, 100, 10000, 19999, 20000})
    CHECK(b.at_rank(rank) == Approx(a.at_rank(rank)).epsilon(2e-3));
  CHECK(b.at_rank(20000) == a.max);
  CHECK(a.at_rank(0) == a.at_rank(1));  // clamped
  LatencySamples samples{a, b, {}};
  HtmlReport report;
  report.series.push_back({"run", {}, {}, samples, {}, {}, {}, {}});
  auto html = render_html(report);
  CHECK(html.find("no samples") != std::string::npos);  // e2e: none
  CHECK(occurrences(html, "<path class=\"cdf\"") == 2);
}
