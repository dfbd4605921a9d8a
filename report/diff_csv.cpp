// `diff --csv`: the summary, one row per candidate run.
#include "report/diff_internal.hpp"
#include "report/diff_report.hpp"
#include "metrics/statistics.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace {

std::string count_or_empty(const std::optional<std::size_t>& count) {
  return count ? std::to_string(*count) : "";
}

}  // namespace

void render_diff_csv(const diff::Result& result, std::ostream& out) {
  out << csv_row({"baseline", "run", "alignment", "exchanges", "aligned", "identical", "divergent",
                  "near_ties", "real_changes", "unknown_changes", "errors", "missing_in_candidate",
                  "missing_in_baseline", "differ", "compared", "differ_rate_upper95_pct",
                  "matches_expected", "with_expected"});
  for (const auto& run : result.runs) {
    auto [differ, total] = differ_count(run);
    auto bound = clopper_pearson_upper(differ, total);
    out << csv_row({result.baseline_name, run.name, std::string(diff::to_string(run.alignment)),
                    std::to_string(run.exchanges), std::to_string(run.aligned),
                    std::to_string(run.identical), std::to_string(run.divergent),
                    std::to_string(run.near_ties), std::to_string(run.real_changes),
                    std::to_string(run.unknown_changes), std::to_string(run.errors),
                    std::to_string(run.missing_in_candidate), std::to_string(run.missing_in_baseline),
                    std::to_string(differ), std::to_string(total),
                    bound ? rate_percent_text(*bound * 100, 2) : "", count_or_empty(run.matches_expected),
                    count_or_empty(run.with_expected)});
  }
}

}  // namespace retrace::report
