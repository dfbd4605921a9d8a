// A sweep's summary from its finished run files, every file streamed: the input (and
// --answers-from) once for the expected answers, each run once for its figures (report's
// stream_run: figures, pooled latencies, failed questions), and each level once through diff's
// streaming compare against the baseline. Nothing here holds a run's exchanges.
#include <algorithm>
#include <stdexcept>

#include "sweep/sweep.hpp"

namespace retrace::sweep {

namespace {

// A run file as the diff engine reads it, under the run's name, with its expected answers attached.
class AnsweredSource : public diff::ExchangeSource {
 public:
  AnsweredSource(std::string name, const std::filesystem::path& path, const ExpectedAnswers& answers)
      : name_(std::move(name)), file_(diff::open_trace_source(path)), answers_(&answers) {}
  const std::string& name() const override { return name_; }
  void rewind() override { file_->rewind(); }
  bool next(Exchange& out) override { return file_->next(out) && (answers_->attach(out), true); }
  bool next_outputs(ExchangeOutputs& out) override {
    return file_->next_outputs(out) && (answers_->attach(out), true);
  }
  void whole(Exchange& out) override {
    file_->whole(out);
    answers_->attach(out);
  }
  std::string recovery_note() const override { return file_->recovery_note(); }

 private:
  std::string name_;
  std::unique_ptr<diff::ExchangeSource> file_;
  const ExpectedAnswers* answers_;
};

// Whether any exchange of the baseline carries an expected answer (its own or attached).
bool any_expected(const std::filesystem::path& path, const ExpectedAnswers& answers) {
  TraceReader reader(path);
  ExchangeOutputs outputs;
  while (reader.next(outputs)) {
    answers.attach(outputs);
    if (outputs.expected) return true;
  }
  return false;
}

std::string sweep_schedule(const Plan& plan, const TraceHeader& baseline) {
  // The baseline's own schedule is only the first level; the sweep's is every level.
  std::string levels;
  for (double level : plan.levels) levels += (levels.empty() ? "" : ",") + level_text(level);
  std::string schedule = std::string(to_string(plan.axis)) + " " + levels + " × " + std::to_string(plan.repeats) + " repeats";
  if (plan.axis == Axis::rate) schedule += " (" + plan.arrival + " arrivals)";
  if (plan.axis == Axis::speed) schedule += " (recorded timing)";
  return schedule + report::trace_controls(baseline);
}

RunFigures figures_of(const PlannedRun& planned, const report::StreamedRun& run, bool expect) {
  RunFigures figures;
  figures.name = planned.name;
  figures.file = planned.file;
  figures.level = planned.level;
  figures.repeat = planned.repeat;
  figures.baseline = planned.baseline;
  figures.exchanges = run.stats.exchanges;
  figures.errors = run.stats.exchanges - run.stats.completed;
  figures.requests_per_s = run.stats.requests_per_s;
  figures.output_tokens_per_s = run.stats.output_tokens_per_s;
  figures.client = metrics::client_of(run.stats);
  if (expect) {
    figures.failed = run.questions.kept();
    figures.failed_left_out = run.questions.left_out();
  }
  return figures;
}

void add_comparison(RunFigures& run, const diff::RunComparison& comparison) {
  run.identical = comparison.identical;
  run.divergent = comparison.divergent;
  run.near_ties = comparison.near_ties;
  run.real_changes = comparison.real_changes;
  run.missing = comparison.missing_in_candidate + comparison.missing_in_baseline;
  run.diff_errors = comparison.errors;
  run.not_compared = comparison.not_compared;
  run.not_compared_why = diff::not_compared_text(comparison);
  run.matches_expected = comparison.matches_expected;
}

}  // namespace

void ExpectedAnswers::add_input(const Exchange& exchange) {
  // Without answers by key, an input exchange without its own answer can give none.
  if (!exchange.expected && by_key_.empty()) return;
  if (exchange.expected) any_ = true;
  input_.emplace(exchange.id, Source{exchange.key, exchange.expected});
}

template <class E>
void ExpectedAnswers::fill(E& exchange) const {
  if (exchange.expected || !any_) return;
  const Source* source = nullptr;
  if (exchange.source_id) {
    auto it = input_.find(*exchange.source_id);
    if (it != input_.end()) source = &it->second;
  }
  if (source && source->expected) {
    exchange.expected = source->expected;
    return;
  }
  auto it = by_key_.find(source ? source->key : exchange.key);
  if (it != by_key_.end()) exchange.expected = it->second;
}

void ExpectedAnswers::attach(Exchange& exchange) const { fill(exchange); }
void ExpectedAnswers::attach(ExchangeOutputs& exchange) const { fill(exchange); }

ExpectedAnswers expected_answers(const std::filesystem::path& input, std::map<RequestKey, std::string> by_key) {
  ExpectedAnswers answers(std::move(by_key));
  TraceReader reader(input);
  Exchange exchange;
  while (reader.next_request(exchange)) answers.add_input(exchange);
  return answers;
}

std::map<RequestKey, std::string> expected_by_key(const std::filesystem::path& trace) {
  std::map<RequestKey, std::string> out;
  TraceReader reader(trace);
  Exchange exchange;
  while (reader.next_request(exchange))
    if (exchange.expected) out.emplace(exchange.key, *exchange.expected);
  return out;
}

void attach_expected(LoadedTrace& run, const LoadedTrace& input, const std::map<RequestKey, std::string>& by_key) {
  ExpectedAnswers answers(by_key);
  for (const auto& exchange : input.exchanges) answers.add_input(exchange);
  for (auto& exchange : run.exchanges) answers.attach(exchange);
}

Summary summarize_sweep(const Plan& plan, const std::filesystem::path& dir) {
  const ExpectedAnswers answers = expected_answers(
      plan.trace, plan.answers_from.empty() ? std::map<RequestKey, std::string>{} : expected_by_key(plan.answers_from));
  const PlannedRun& baseline_run = plan.runs.front();
  const auto baseline_path = dir / baseline_run.file;
  TraceHeader baseline_header = TraceReader(baseline_path).header();
  bool expect = answers.any() && any_expected(baseline_path, answers);
  auto options = diff_options(plan, expect);

  Summary summary;
  summary.trace = plan.trace;
  summary.target = plan.target;
  summary.baseline_run = baseline_run.name;
  summary.header = report::header_from_trace(baseline_header);
  if (summary.header.trace.empty()) summary.header.trace = plan.trace;
  summary.axis = std::string(to_string(plan.axis));
  summary.header.schedule = sweep_schedule(plan, baseline_header);
  for (double level : plan.levels) {
    std::vector<const PlannedRun*> planned;
    for (const auto& run : plan.runs)
      if (run.level == level) planned.push_back(&run);
    std::sort(planned.begin(), planned.end(),
              [](const PlannedRun* a, const PlannedRun* b) { return a->repeat < b->repeat; });

    // Each run streamed once for its figures; the level's latencies and figures pooled as they come.
    replay::StatsBuilder pooled(replay::is_open_loop(baseline_header));
    report::LatencySampler latency;
    report::StreamSinks sinks{[&](Exchange& exchange) { answers.attach(exchange); }, &latency, &pooled};
    std::vector<RunFigures> figures;
    std::vector<std::unique_ptr<AnsweredSource>> sources;
    std::vector<diff::ExchangeSource*> candidates;
    for (const auto* run : planned) {
      if (!run->done)
        throw std::runtime_error("run " + run->name + " has not finished; continue with --resume " + dir.string());
      auto streamed = report::stream_run(dir / run->file, options, report::kShownFailedQuestions, sinks);
      figures.push_back(figures_of(*run, streamed, expect));
      summary.errors += figures.back().errors;
      sources.push_back(std::make_unique<AnsweredSource>(run->name, dir / run->file, answers));
      candidates.push_back(sources.back().get());
    }
    AnsweredSource baseline("baseline", baseline_path, answers);
    diff::Result result = diff::compare(baseline, candidates, options);
    for (std::size_t i = 0; i < figures.size() && i < result.runs.size(); ++i) add_comparison(figures[i], result.runs[i]);

    auto pooled_stats = std::move(pooled).finish();
    summary.levels.push_back(summarize_level(level, result, figures, pooled_stats));
    summary.levels.back().latency = std::move(latency).finish();
    summary.levels.back().errors_by_kind = pooled_stats.errors_by_kind;
    auto divergences = collect_divergences(level, result);
    summary.divergences.insert(summary.divergences.end(), divergences.begin(), divergences.end());
    summary.runs.insert(summary.runs.end(), figures.begin(), figures.end());
  }
  return summary;
}

}  // namespace retrace::sweep
