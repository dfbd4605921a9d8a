// Internal to report/study_*.cpp: the pieces of a study's summary that the one-target renderers
// (study_summary.cpp, study_tables.cpp) and the several-target ones (study_targets.cpp) share, so
// a sentence or a JSON field is written in one place.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "report/study_summary.hpp"

namespace retrace::report {
struct StudyTargets;
}

namespace retrace::report::study_detail {

boost::json::object counts_json(const std::map<std::string, std::size_t>& values);  // value -> count
// Markdown's emphasis and code marks dropped: the HTML report's plain text of a summary sentence.
std::string plain(const std::string& markdown);

std::string joined(const std::vector<std::string>& items, std::string_view last = " and ");
boost::json::object spread_json(const Spread& spread);
// "12.3 (11.0–13.6)": a mean and its 95 % interval.
std::string ci_cell(const Spread& spread);
std::string cell_label(const StudyCell& cell);  // "c1 cold (control)"
boost::json::object study_json(const StudySummary& summary);  // summary.json's root object

// The scope's clauses, each from the data: "`m` as the server named it, served by retrace-serve
// 1.2 (identified by ...) at URL"; "this set of 6 requests (6 distinct prompts)"; "at concurrency
// 1 to 4"; "with the prompt cache cold (...)"; "2 runs of each, at temperature 0 (...)"; what the
// study is not evidence of; the control's bound.
std::string served_by(const StudySummary& summary);
std::string request_set(const StudySummary& summary);
std::string load_clause(const StudySummary& summary);
std::string cache_clause(const StudySummary& summary);
std::string runs_and_sampling(const StudySummary& summary);
std::string not_evidence();
std::string control_sentence(const StudySummary& summary);

// Several targets (study_targets.cpp): the NOT GREEDY warnings, each naming its target; the
// price-of-repeatability and across-target tables as text cells, with their columns.
std::string banners(const StudyTargets& study);
extern const std::vector<std::string> kPriceColumns, kAcrossColumns;
std::vector<std::vector<std::string>> price_rows(const StudyTargets& study);
std::vector<std::vector<std::string>> across_rows(const StudyTargets& study);

}  // namespace retrace::report::study_detail
