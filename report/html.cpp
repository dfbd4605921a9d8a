// The HTML report page: header, throughput, latency distributions, differences with their bounds,
// errors, every divergent output with a token-level view, first-divergence positions, gold
// matching. Sections without data say so instead of disappearing.
#include "report/html.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <sstream>

#include "report/diff_report.hpp"
#include "report/svg.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace {

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1180px;padding:16px 24px;color:#1b1b1b;background:#fff}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}dl.meta dt{color:#555}dl.meta dd{margin:0;font-family:ui-monospace,monospace}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:12px}svg.chart{width:560px;max-width:100%;height:auto;border:1px solid #eee}
svg text{font:11px system-ui,sans-serif;fill:#333}svg .chart-title{font-weight:600;font-size:13px}
svg .grid{stroke:#eee}svg .axis{stroke:#888}svg .cdf{fill:none;stroke-width:2}svg .whisker{stroke:#222;stroke-width:1.5;fill:none}svg .sample{fill:#e69f00;stroke:#222;stroke-width:.5}
.badge{display:inline-block;border-radius:3px;padding:0 6px;font-size:12px;font-weight:600}
.real-change{background:#fbd5d0;color:#8a1c0b}.near-tie{background:#fff0c2;color:#6b5200}.unclassified{background:#e4e4e4;color:#333}
article.divergence{border:1px solid #ddd;border-radius:4px;padding:8px 12px;margin:12px 0}
table.tokens td{font-family:ui-monospace,monospace;white-space:pre;border-color:#eee}table.tokens td.first{background:#ffd24d;font-weight:700;outline:2px solid #b58900}
table.tokens th{font-weight:400;color:#666}.alts{display:flex;gap:24px;flex-wrap:wrap}td.chosen{font-weight:700}
.mono{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}.note{color:#555}footer{margin-top:32px;color:#777;font-size:12px}
)";

// The script only reads and rearranges the DOM; no trace data is ever placed inside it.
constexpr const char* kScript = R"(
window.onerror=function(message){document.body.setAttribute('data-error',String(message));};
(function(){
  var articles=document.querySelectorAll('article.divergence');
  var index=document.getElementById('divergence-index');
  if(index){
    articles.forEach(function(article,i){
      var row=document.createElement('tr');
      ['run','request','position','class','margin'].forEach(function(field){
        var cell=document.createElement('td');cell.textContent=article.getAttribute('data-'+field)||'';row.appendChild(cell);
      });
      var link=document.createElement('a');link.href='#'+article.id;link.textContent='#'+(i+1);
      var first=document.createElement('td');first.appendChild(link);row.insertBefore(first,row.firstChild);
      row.setAttribute('data-class',article.getAttribute('data-class'));
      index.appendChild(row);
    });
  }
  var toggle=document.getElementById('hide-near-ties');
  if(toggle){toggle.addEventListener('change',function(){
    document.querySelectorAll('[data-class="near-tie"]').forEach(function(node){node.hidden=toggle.checked;});
  });}
  document.body.setAttribute('data-divergences',String(articles.length));
  // Drawn boxes (a legend's, any text) that cross their chart's title, as the browser laid them
  // out: 0 expected.
  var overlaps=0;
  document.querySelectorAll('svg.chart').forEach(function(chart){
    var title=chart.querySelector('.chart-title');if(!title)return;
    var t=title.getBoundingClientRect();
    chart.querySelectorAll('text,rect').forEach(function(node){
      if(node===title)return;
      var b=node.getBoundingClientRect();
      if(b.left<t.right&&t.left<b.right&&b.top<t.bottom&&t.top<b.bottom)overlaps++;
    });
  });
  document.body.setAttribute('data-chart-title-overlaps',String(overlaps));
  document.body.setAttribute('data-ready','1');
})();
)";

std::string e(std::string_view text) { return html_escape(text); }
std::string shown_token(std::string_view bytes) { return e(printable(bytes)); }
std::string or_unknown(const std::string& text) { return text.empty() ? "unknown" : text; }

std::string class_slug(diff::Classification classification) {
  switch (classification) {
    case diff::Classification::real_change: return "real-change";
    case diff::Classification::near_tie: return "near-tie";
    case diff::Classification::unknown: break;
  }
  return "unclassified";
}

std::string badge(diff::Classification classification) {
  return "<span class=\"badge " + class_slug(classification) + "\">" +
         e(classification_name(classification)) + "</span>";
}

std::string interval_text(const Spread& spread, int digits) {
  if (spread.count == 0) return "—";
  std::string text = fixed(spread.mean, digits);
  if (spread.ci_low) text += " (95% CI " + fixed(*spread.ci_low, digits) + "–" + fixed(*spread.ci_high, digits) + ")";
  return text;
}

std::string range_text(const Spread& spread, int digits) {
  if (spread.count < 2) return "—";
  return fixed(spread.min, digits) + "–" + fixed(spread.max, digits) + " (" + fixed(spread.spread_percent, 1) +
         " %, sd " + fixed(spread.stddev, digits) + ")";
}

void header_section(const HtmlReport& report, std::ostream& out) {
  const auto& header = report.header;
  out << "<header><h1>" << e(report.title) << "</h1><dl class=\"meta\">"
      << "<dt>server</dt><dd>" << e(or_unknown(header.server)) << "</dd>"
      << "<dt>model</dt><dd>" << e(or_unknown(header.model)) << "</dd>"
      << "<dt>schedule</dt><dd>" << e(or_unknown(header.schedule)) << "</dd>"
      << "<dt>trace</dt><dd>" << e(or_unknown(header.trace)) << "</dd>"
      << "<dt>when</dt><dd>" << e(or_unknown(header.when)) << "</dd>"
      << "<dt>runs made by</dt><dd>retrace " << e(or_unknown(header.tool_version)) << "</dd>"
      << "</dl>";
  for (const auto& note : report.notes) out << "<p class=\"note\">warning: " << e(note) << "</p>";
  for (const auto& paragraph : report.paragraphs) out << "<p class=\"scope\">" << e(paragraph) << "</p>";
  out << "</header>\n";
}

void throughput_section(const HtmlReport& report, std::ostream& out) {
  out << "<section id=\"throughput\"><h2>Throughput</h2>";
  std::vector<svg::Bar> requests, tokens;
  for (const auto& series : report.series) {
    auto bar = [&](const Spread& spread) {
      svg::Bar one{series.label, spread.mean, spread.ci_low, spread.ci_high, {}};
      if (spread.count > 1) one.points = {spread.min, spread.max};
      return one;
    };
    requests.push_back(bar(series.requests_per_s));
    tokens.push_back(bar(series.output_tokens_per_s));
  }
  out << "<div class=\"charts\">" << svg::bar_chart("Requests per second (mean, 95% CI, min and max)", "req/s", requests)
      << svg::bar_chart("Output tokens per second (mean, 95% CI, min and max)", "tok/s", tokens) << "</div>";
  out << "<table><tr><th></th><th>repeats</th><th>req/s mean (95% CI)</th><th>req/s min–max (spread, sd)</th>"
         "<th>output tok/s mean (95% CI)</th><th>output tok/s min–max (spread, sd)</th></tr>";
  for (const auto& series : report.series)
    out << "<tr><th>" << e(series.label) << "</th><td class=\"n\">" << series.requests_per_s.count
        << "</td><td class=\"n\">" << interval_text(series.requests_per_s, 2) << "</td><td class=\"n\">"
        << range_text(series.requests_per_s, 2) << "</td><td class=\"n\">"
        << interval_text(series.output_tokens_per_s, 1) << "</td><td class=\"n\">"
        << range_text(series.output_tokens_per_s, 1) << "</td></tr>";
  out << "</table>";
  // Whether the client could have set the pace: throughput is the server's only when it did not.
  for (const auto& series : report.series)
    if (series.client) out << "<p class=\"note\">" << e(series.label) << ": the client " << e(*series.client) << "</p>";
  out << "</section>\n";
}

std::string percentile_cells(const metrics::Percentiles& p) {
  if (p.count == 0) return "<td class=\"n\" colspan=\"5\">no samples</td>";
  return "<td class=\"n\">" + fixed(p.p50, 1) + "</td><td class=\"n\">" + fixed(p.p90, 1) + "</td><td class=\"n\">" +
         fixed(p.p99, 1) + "</td><td class=\"n\">" + fixed(p.max, 1) + "</td><td class=\"n\">" +
         std::to_string(p.count) + "</td>";
}

void latency_section(const HtmlReport& report, std::ostream& out) {
  out << "<section id=\"latency\"><h2>Latency distributions</h2><div class=\"charts\">";
  std::vector<svg::Series> ttft, itl, e2e;
  for (const auto& series : report.series) {
    ttft.push_back({series.label, &series.latency.ttft_ms});
    itl.push_back({series.label, &series.latency.itl_ms});
    e2e.push_back({series.label, &series.latency.e2e_ms});
  }
  out << svg::cdf_chart("Time to first token (CDF)", "ms", ttft)
      << svg::cdf_chart("Inter-token latency (CDF)", "ms", itl)
      << svg::cdf_chart("End-to-end latency (CDF)", "ms", e2e) << "</div>";
  out << "<table><tr><th></th><th>metric</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th><th>n</th></tr>";
  for (const auto& series : report.series) {
    out << "<tr><th rowspan=\"3\">" << e(series.label) << "</th><td>TTFT</td>" << percentile_cells(series.latency.ttft_ms)
        << "</tr><tr><td>inter-token</td>" << percentile_cells(series.latency.itl_ms) << "</tr><tr><td>end-to-end</td>"
        << percentile_cells(series.latency.e2e_ms) << "</tr>";
  }
  out << "</table></section>\n";
}

void differences_section(const HtmlReport& report, std::ostream& out) {
  bool any = std::any_of(report.series.begin(), report.series.end(), [](const auto& s) { return s.differing.has_value(); });
  if (!any) return;
  out << "<section id=\"differences\"><h2>Outputs differing from the baseline</h2><p class=\"note\">"
         "The bound is the 95 % upper confidence bound on the per-request difference rate (Clopper–Pearson): "
         "what the observed count rules out, not a measured rate.</p><table><tr><th></th><th>differ</th>"
         "<th>95% upper bound on rate</th><th>near-ties among them</th></tr>";
  for (const auto& series : report.series) {
    if (!series.differing) continue;
    out << "<tr><th>" << e(series.label) << "</th><td class=\"n\">" << *series.differing << " of " << *series.requests
        << "</td><td class=\"n\">" << e(rate_bound_text(*series.differing, *series.requests)) << "</td><td class=\"n\">"
        << series.near_ties.value_or(0) << "</td></tr>";
  }
  out << "</table></section>\n";
}

void errors_section(const HtmlReport& report, std::ostream& out) {
  out << "<section id=\"errors\"><h2>Errors by kind</h2>";
  if (report.errors_by_kind.empty()) {
    out << "<p>No request failed.</p></section>\n";
    return;
  }
  out << "<table><tr><th>kind</th><th>requests</th></tr>";
  for (const auto& [kind, count] : report.errors_by_kind)
    out << "<tr><td>" << e(kind) << "</td><td class=\"n\">" << count << "</td></tr>";
  out << "</table></section>\n";
}

// Both streams around the first divergent token, aligned on it: context before right-aligned,
// the divergent tokens in one column, context after left-aligned.
void token_table(const diff::Divergence& divergence, std::ostream& out) {
  std::size_t before = std::max(divergence.baseline_before.size(), divergence.candidate_before.size());
  std::size_t after = std::max(divergence.baseline_after.size(), divergence.candidate_after.size());
  auto row = [&](const char* name, const std::vector<diff::TokenView>& tokens_before,
                 const std::optional<diff::TokenView>& token, const std::vector<diff::TokenView>& tokens_after) {
    out << "<tr><th>" << name << "</th>";
    for (std::size_t i = tokens_before.size(); i < before; ++i) out << "<td></td>";
    for (const auto& t : tokens_before) out << "<td>" << shown_token(t.bytes) << "</td>";
    out << "<td class=\"first\">" << (token ? shown_token(token->bytes) : "(end)") << "</td>";
    for (const auto& t : tokens_after) out << "<td>" << shown_token(t.bytes) << "</td>";
    for (std::size_t i = tokens_after.size(); i < after; ++i) out << "<td></td>";
    out << "</tr>";
  };
  out << "<table class=\"tokens\">";
  row("baseline", divergence.baseline_before, divergence.baseline_token, divergence.baseline_after);
  row("candidate", divergence.candidate_before, divergence.candidate_token, divergence.candidate_after);
  out << "</table>";
}

void alternatives_table(const char* side, const std::optional<diff::TokenView>& token,
                        const std::optional<diff::TokenView>& other, std::ostream& out) {
  out << "<div><strong>" << side << "</strong>";
  if (!token) {
    out << "<p>(output ended)</p></div>";
    return;
  }
  if (token->top.empty()) {
    out << "<p>no alternatives recorded" << (token->logprob ? "; logprob " + fixed(*token->logprob, 4) : "")
        << "</p></div>";
    return;
  }
  out << "<table><tr><th>token</th><th>logprob</th><th>probability</th></tr>";
  for (const auto& alternative : token->top) {
    bool chosen = alternative.bytes == token->bytes, rival = other && alternative.bytes == other->bytes;
    out << "<tr><td class=\"mono" << (chosen ? " chosen" : "") << "\">" << shown_token(alternative.bytes)
        << (chosen ? " ◀ chosen" : rival ? " ◀ other side" : "") << "</td><td class=\"n\">"
        << fixed(alternative.logprob, 4) << "</td><td class=\"n\">" << fixed(std::exp(alternative.logprob), 4)
        << "</td></tr>";
  }
  out << "</table></div>";
}

void divergences_section(const HtmlReport& report, std::ostream& out) {
  out << "<section id=\"divergences\"><h2>Divergent outputs (" << report.divergences.size() + report.divergences_left_out
      << ")</h2>";
  if (report.divergences.empty()) {
    out << "<p>None: every compared output matches the baseline.</p></section>\n";
    return;
  }
  out << "<p class=\"note\">Real changes first, then unclassified ones, then near-ties (the two candidates' "
         "logprobs within the near-tie margin at the divergent position: numeric noise).</p>"
      << "<label><input type=\"checkbox\" id=\"hide-near-ties\"> hide near-ties</label>"
      << "<table><thead><tr><th></th><th>run</th><th>request</th><th>first divergent token (baseline/candidate)</th>"
         "<th>class</th><th>margin (nats)</th></tr></thead><tbody id=\"divergence-index\"></tbody></table>";
  auto entries = most_severe(report.divergences, kShownDivergences);
  std::size_t number = 0;
  for (const auto& entry : entries) {
    const auto& divergence = entry.divergence;
    ++number;
    std::string margin = divergence.margin ? (divergence.margin_is_lower_bound ? "≥ " : "") + fixed(*divergence.margin, 4) : "—";
    std::string position = std::to_string(divergence.baseline_index) + "/" + std::to_string(divergence.candidate_index);
    out << "<article class=\"divergence\" id=\"d" << number << "\" data-class=\"" << class_slug(divergence.classification)
        << "\" data-run=\"" << e(entry.run) << "\" data-request=\"" << entry.baseline_id << "\" data-position=\""
        << position << "\" data-margin=\"" << e(margin) << "\"><h3>#" << number << " " << e(entry.run) << ", request "
        << entry.baseline_id << " " << badge(divergence.classification) << "</h3><p>First divergent token at index "
        << divergence.baseline_index << " (baseline) / " << divergence.candidate_index << " (candidate), byte "
        << divergence.byte_offset << "; compared " << e(diff::to_string(divergence.basis));
    if (!divergence.basis_note.empty()) out << " (" << e(divergence.basis_note) << ")";
    out << "; margin " << e(margin) << (divergence.margin ? " nats" : " (no logprobs recorded)") << "; key <span class=\"mono\">"
        << e(entry.key.substr(0, 16)) << "</span>.</p>";
    token_table(divergence, out);
    out << "<div class=\"alts\">";
    alternatives_table("baseline alternatives", divergence.baseline_token, divergence.candidate_token, out);
    alternatives_table("candidate alternatives", divergence.candidate_token, divergence.baseline_token, out);
    out << "</div><p class=\"note\">After it: common suffix " << divergence.common_suffix << ", edit distance "
        << (divergence.edit_distance_capped ? "&gt; " : "") << divergence.edit_distance << " ("
        << (divergence.basis == diff::Basis::token_ids ? "tokens" : "bytes") << "); lengths " << divergence.baseline_tokens
        << " / " << divergence.candidate_tokens << " tokens; finish " << e(or_unknown(divergence.baseline_finish)) << " / "
        << e(or_unknown(divergence.candidate_finish)) << ".</p></article>";
  }
  if (auto more = report.divergences.size() + report.divergences_left_out - entries.size(); more > 0)
    out << "<p class=\"more\">… and " << thousands(more) << " more (the counts above include them; "
        << "retrace diff --json lists every one).</p>";
  out << "</section>\n";
}

void positions_section(const HtmlReport& report, std::ostream& out) {
  if (report.first_divergence_positions.empty()) return;
  std::vector<svg::Bar> bars;
  for (const auto& [label, count] : position_buckets(report.first_divergence_positions))
    bars.push_back({label, double(count), std::nullopt, std::nullopt, {}});
  out << "<section id=\"positions\"><h2>Where outputs first part</h2><div class=\"charts\">"
      << svg::bar_chart("First divergent token index (log2 buckets)", "outputs", bars) << "</div></section>\n";
}

void gold_section(const HtmlReport& report, std::ostream& out) {
  if (report.gold.empty()) return;
  out << "<section id=\"gold\"><h2>Expected answers</h2><table><tr><th>run</th><th>match expected</th>"
         "<th>failed questions</th></tr>";
  for (const auto& gold : report.gold) {
    out << "<tr><td>" << e(gold.run) << "</td><td class=\"n\">" << gold.matching << " of " << gold.total << "</td><td>";
    if (gold.failed.empty()) out << "none";
    std::size_t shown = std::min(gold.failed.size(), kShownFailedQuestions);
    for (const auto& failed : std::span(gold.failed).first(shown))
      out << "<div class=\"failed\">request " << failed.id << ": expected <span class=\"mono\">" << shown_token(failed.expected)
          << "</span>, got <span class=\"mono\">" << shown_token(failed.output.substr(0, 200))
          << (failed.output.size() > 200 ? "…" : "") << "</span></div>";
    if (auto more = gold.failed.size() - shown + gold.failed_left_out; more > 0)
      out << "<div class=\"failed more\">… and " << thousands(more) << " more</div>";
    out << "</td></tr>";
  }
  out << "</table></section>\n";
}

void tables_section(const HtmlReport& report, std::ostream& out) {
  for (const auto& table : report.tables) {
    out << "<section id=\"" << e(table.id) << "\"><h2>" << e(table.title) << "</h2>";
    if (!table.caption.empty()) out << "<p>" << e(table.caption) << "</p>";
    out << "<table><tr>";
    for (const auto& column : table.columns) out << "<th>" << e(column) << "</th>";
    out << "</tr>";
    for (const auto& row : table.rows) {
      out << "<tr>";
      for (const auto& cell : row) out << "<td>" << e(cell) << "</td>";
      out << "</tr>";
    }
    out << "</table></section>\n";
  }
}

void footer(const HtmlReport& report, std::ostream& out) {
  out << "<footer>Written by retrace " << e(or_unknown(report.generator))
      << ". Self-contained: styles, charts and script are inline; the page loads nothing.</footer>\n"
      << "<script>" << kScript << "</script>\n</body></html>\n";
}

}  // namespace

std::string render_html(const HtmlReport& report) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">"
      << "<title>" << e(report.title) << "</title><style>" << kStyle << "</style></head>\n"
      << "<body data-report-kind=\"" << e(report.kind) << "\">\n";
  header_section(report, out);
  if (report.kind == "search" || report.kind == "shadow") {  // its charts and its tables
    out << "<section id=\"search\"><h2>" << e(report.charts_title) << "</h2><div class=\"charts\">";
    for (const auto& chart : report.charts) out << chart;  // drawn by svg.cpp, escaped there
    out << "</div></section>\n";
    tables_section(report, out);
    footer(report, out);
    return out.str();
  }
  throughput_section(report, out);
  tables_section(report, out);
  latency_section(report, out);
  if (!report.charts.empty()) {  // a run's server (report/server_charts.hpp)
    out << "<section id=\"server\"><h2>" << e(report.charts_title) << "</h2><div class=\"charts\">";
    for (const auto& chart : report.charts) out << chart;  // drawn by svg.cpp, escaped there
    out << "</div></section>\n";
  }
  differences_section(report, out);
  errors_section(report, out);
  if (report.kind != "run") {
    divergences_section(report, out);
    positions_section(report, out);
  }
  gold_section(report, out);
  footer(report, out);
  return out.str();
}

}  // namespace retrace::report
