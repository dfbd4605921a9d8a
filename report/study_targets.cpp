// Renderers of a several-target study: the scope naming every target as identified, the price of
// repeatability (throughput beside the difference rate, per target and cell), the baselines
// across targets; JSON, Markdown, CSV and the HTML report's model.
#include "report/study_targets.hpp"

#include <sstream>

#include "report/study_internal.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;
using study_detail::ci_cell;
using study_detail::counts_json;
using study_detail::spread_json;

std::size_t StudyTargets::errors() const {
  std::size_t total = 0;
  for (const auto& target : targets) total += target.errors;
  return total;
}

bool StudyTargets::any_differs() const {
  for (const auto& target : targets)
    if (target.any_differs()) return true;
  for (const auto& one : across)
    if (one.differing > 0) return true;
  return false;
}

namespace study_detail {

const std::vector<std::string> kPriceColumns{"target", "cell", "req/s (95% CI)", "output tok/s (95% CI)",
                                             "differ from its own baseline (95% bound)", "part diverging first"};
const std::vector<std::string> kAcrossColumns{"target", "baseline outputs differing from target 1's (95% bound)",
                                              "near-tie / real / unclassified", "part diverging first"};

}  // namespace study_detail

namespace {

using study_detail::kAcrossColumns;
using study_detail::kPriceColumns;

std::string differ_text(std::size_t k, std::size_t n) {
  return std::to_string(k) + " of " + std::to_string(n) + " (" + rate_bound_text(k, n) + ")";
}

// The first target's summary whose requests were not all greedy (its sampling words the scope),
// else the first target's.
const StudySummary& sampling_witness(const StudyTargets& study) {
  for (const auto& target : study.targets)
    if (!target.sampling.all_greedy()) return target;
  return study.targets.front();
}

}  // namespace

namespace study_detail {

std::string banners(const StudyTargets& study) {
  std::string out;
  for (std::size_t i = 0; i < study.targets.size(); ++i)
    if (auto banner = sampling_banner(study.targets[i]); !banner.empty())
      out += (out.empty() ? "" : "\n\n") + target_label(study, i) + ": " + banner;
  return out;
}

// The rows of the price table, as text cells: target, cell, req/s, tok/s, differ, parts.
std::vector<std::vector<std::string>> price_rows(const StudyTargets& study) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < study.targets.size(); ++i)
    for (const auto& cell : study.targets[i].cells)
      rows.push_back({target_label(study, i), study_detail::cell_label(cell), ci_cell(cell.requests_per_s),
                      ci_cell(cell.output_tokens_per_s), differ_text(cell.differing, cell.compared),
                      first_parts_text(cell.first_parts)});
  return rows;
}

std::vector<std::vector<std::string>> across_rows(const StudyTargets& study) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 1; i < study.targets.size(); ++i) {
    const auto& one = study.across.at(i);
    rows.push_back({target_label(study, i), differ_text(one.differing, one.compared),
                    std::to_string(one.near_ties) + " / " + std::to_string(one.real_changes) + " / " +
                        std::to_string(one.unclassified),
                    first_parts_text(one.first_parts)});
  }
  return rows;
}

}  // namespace study_detail

namespace {

using study_detail::across_rows;
using study_detail::banners;
using study_detail::price_rows;

std::string markdown_table(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows) {
  std::string out = "|";
  for (const auto& column : columns) out += " " + column + " |";
  out += "\n|";
  for (std::size_t i = 0; i < columns.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const auto& cell : row) out += " " + cell + " |";
    out += "\n";
  }
  return out;
}

}  // namespace

std::string target_label(const StudyTargets& study, std::size_t index) {
  const auto& target = study.targets.at(index);
  std::string server = target.server_kind + (target.server_version.empty() ? "" : " " + target.server_version);
  return "target " + std::to_string(index + 1) + " (" + server + " at " + target.target + ")";
}

std::string study_targets_scope(const StudyTargets& study) {
  using namespace study_detail;
  const auto& first = study.targets.front();
  std::ostringstream out;
  out << "**Scope.** This study sent the same requests to " << study.targets.size() << " targets: ";
  for (std::size_t i = 0; i < study.targets.size(); ++i)
    out << (i == 0 ? "" : "; ") << "target " << (i + 1) << ", " << served_by(study.targets[i]) << ", "
        << cache_clause(study.targets[i]);
  out << ". On each it is direct evidence about " << request_set(first) << ", " << load_clause(first) << ", "
      << runs_and_sampling(sampling_witness(study))
      << ", each output compared with that target's own baseline run. " << not_evidence();
  for (std::size_t i = 0; i < study.targets.size(); ++i) {
    const auto& target = study.targets[i];
    out << " Target " << (i + 1) << ": " << bound_sentence(target.differing(), target.compared()) << ".";
    if (auto control = control_sentence(target); !control.empty()) out << " " << control;
  }
  for (std::size_t i = 1; i < study.targets.size(); ++i)
    out << " Across targets, the baseline outputs of target " << (i + 1) << " against target 1's: "
        << bound_sentence(study.across.at(i).differing, study.across.at(i).compared) << ".";
  if (study.errors() > 0)
    out << " " << study.errors() << " requests failed and are not counted: results are incomplete.";
  return out.str();
}

std::string price_table(const StudyTargets& study) {
  return "Per target and cell: throughput is the mean across the cell's runs (95% CI of the mean, "
         "Student t) beside how many of its outputs differ from that target's own baseline (95% upper "
         "bound, Clopper–Pearson).\n\n" +
         markdown_table(kPriceColumns, price_rows(study));
}

std::string across_table(const StudyTargets& study) {
  return "Each target's baseline run against target 1's, request by request.\n\n" +
         markdown_table(kAcrossColumns, across_rows(study));
}

std::string study_targets_to_markdown(const StudyTargets& study) {
  std::ostringstream out;
  out << "# retrace study\n\n";
  if (auto text = banners(study); !text.empty()) out << text << "\n\n";
  out << study_targets_scope(study) << "\n\n## Price of repeatability\n\n" << price_table(study)
      << "\n## Across targets\n\n" << across_table(study);
  for (std::size_t i = 0; i < study.targets.size(); ++i) {
    const auto& target = study.targets[i];
    out << "\n## " << target_label(study, i) << "\n\n"
        << header_line(target.header) << "\n\n"
        << study_client_line(target) << "\n\n"
        << study_cells_table(target) << "\nEvery section of this target's summary: `" << study.dirs.at(i)
        << "/summary.md`.\n";
  }
  return out.str();
}

std::string study_targets_to_json(const StudyTargets& study) {
  json::array targets, price, across;
  for (std::size_t i = 0; i < study.targets.size(); ++i) {
    const auto& target = study.targets[i];
    targets.push_back(json::object{{"target", i + 1},
                                   {"url", target.target},
                                   {"label", target_label(study, i)},
                                   {"dir", study.dirs.at(i)},
                                   {"summary", study_detail::study_json(target)}});
    for (const auto& cell : target.cells)
      price.push_back(json::object{
          {"target", i + 1},
          {"cell", cell.name},
          {"concurrency", cell.concurrency},
          {"cache", cell.cache},
          {"control", cell.control},
          {"requests_per_s", spread_json(cell.requests_per_s)},
          {"output_tokens_per_s", spread_json(cell.output_tokens_per_s)},
          {"compared", cell.compared},
          {"differing", cell.differing},
          {"differing_rate_upper95", json_number(clopper_pearson_upper(cell.differing, cell.compared))},
          {"first_diverging_part", counts_json(cell.first_parts)}});
    if (i == 0) continue;
    const auto& one = study.across.at(i);
    across.push_back(json::object{
        {"target", i + 1},
        {"against", 1},
        {"compared", one.compared},
        {"differing", one.differing},
        {"differing_rate_upper95", json_number(clopper_pearson_upper(one.differing, one.compared))},
        {"near_ties", one.near_ties},
        {"real_changes", one.real_changes},
        {"unclassified", one.unclassified},
        {"first_diverging_part", counts_json(one.first_parts)}});
  }
  std::string banner = banners(study);
  json::object root{{"schema_version", kJsonSchemaVersion},
                    {"kind", "study"},
                    {"not_greedy", banner.empty() ? json::value(nullptr) : json::value(banner)},
                    {"scope", study_targets_scope(study)},
                    {"differs", study.any_differs()},
                    {"errors", study.errors()},
                    {"price_of_repeatability", std::move(price)},
                    {"across_targets", std::move(across)},
                    {"targets", std::move(targets)}};
  return json_text(root) + "\n";
}

std::string study_targets_to_csv(const StudyTargets& study) {
  std::string out;
  for (std::size_t i = 0; i < study.targets.size(); ++i) {
    const auto& target = study.targets[i];
    const auto& one = study.across.at(i);
    std::string prefix = csv_row({std::to_string(i + 1), target.target, target.server_kind, target.server_version,
                                  target.model, i == 0 ? "" : std::to_string(one.compared),
                                  i == 0 ? "" : std::to_string(one.differing)});
    prefix.resize(prefix.size() - 2);  // its "\r\n": the cell's row follows on the same line
    std::istringstream rows(study_to_csv(target));
    std::string line;
    bool header = true;
    while (std::getline(rows, line)) {
      if (header && i == 0)
        out += "target,url,server_kind,server_version,model,baseline_compared_with_target1,"
               "baseline_differing_from_target1," + line + "\n";
      else if (!header)
        out += prefix + "," + line + "\n";
      header = false;
    }
  }
  return out;
}

}  // namespace retrace::report
