// `retrace demo`: the whole story on a fresh machine, against the built-in simulator. Starts
// `retrace serve` (this same binary), records the gold questions through `retrace record`, sweeps
// the recording, then studies open-ended prompts (`retrace study`: concurrency × cold/warm cache)
// on a server with batch and cache variance, and bisects the concurrency at which outputs start to
// differ. Every child process is stopped on every path out
// (Child's destructor), and everything written lands in one directory.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "base/private_file.hpp"
#include "dataset/import.hpp"
#include "demo/demo.hpp"
#include "sweep/study.hpp"
#include "sweep/sweep.hpp"
#include "version.hpp"

namespace retrace::demo {

// The demo is a client of sweep, bisect and study and says their names as they do.
using namespace retrace::sweep;

namespace {

namespace fs = std::filesystem;

fs::path default_demo_dir() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char name[64];
  std::strftime(name, sizeof name, "retrace-demo-%Y%m%d-%H%M%S", &local);
  fs::path dir = fs::current_path() / name;
  for (int suffix = 2; fs::exists(dir); ++suffix)
    dir = fs::current_path() / (std::string(name) + "-" + std::to_string(suffix));
  return dir;
}

// The simulator's latency model, made cheaper than its defaults so the demo's 300-odd requests
// fit in well under 90 s on 2 cores, while throughput still responds to batching.
std::vector<std::string> serve_command(const fs::path& self) {
  return {self.string(), "serve", "--listen", "127.0.0.1:0", "--decode-step-ms", "1",
          "--decode-ms-per-sequence", "0.02", "--prefill-ms-per-token", "0.005"};
}

// The demo's log, each line with the whole seconds since the demo began.
struct Stage {
  std::ostream& log;
  const Clock& clock = Clock::system();
  Clock::time_point start = clock.now();
  int seconds() const {
    return static_cast<int>(std::chrono::duration<double>(clock.now() - start).count());
  }
  void say(const std::string& what) {
    log << "demo [" << seconds() << " s] " << what << "\n" << std::flush;
  }
};

Summary sweep_into(const fs::path& trace, const std::string& target, const std::vector<int>& levels,
                   int repeats, const fs::path& dir, const std::string& answers_from,
                   const ReplayArgs& replay_args, const DemoOptions& options, std::ostream& log) {
  create_private_directories(dir);
  Plan plan;
  plan.trace = fs::absolute(trace).string();
  plan.target = target;
  plan.levels.assign(levels.begin(), levels.end());
  plan.repeats = repeats;
  plan.replay = replay_args;
  plan.answers_from = answers_from;
  plan.match = "normalized";
  plan.runs = plan_runs(plan.levels, repeats, plan.order);
  save_plan(plan, dir);
  auto summary = run_sweep(plan, dir, SweepIo{&log, options.stop});
  if (!summary) throw std::runtime_error("interrupted; the partial sweep is in " + dir.string());
  return *summary;
}

report::StudySummary study_into(const fs::path& trace, const std::string& target, const std::vector<int>& levels,
                                int repeats, const fs::path& dir, const ReplayArgs& replay_args,
                                const DemoOptions& options, std::ostream& log) {
  fs::create_directories(dir);
  Plan plan;
  plan.trace = fs::absolute(trace).string();
  plan.target = target;
  plan.levels.assign(levels.begin(), levels.end());
  plan.repeats = repeats;
  plan.replay = replay_args;
  StudySettings settings;  // cold and warm
  plan_study(plan, settings);
  save_plan(plan, dir);
  save_study(settings, dir);
  auto summary = run_study(plan, settings, dir, SweepIo{&log, options.stop});
  if (!summary) throw std::runtime_error("interrupted; the partial study is in " + dir.string());
  return *summary;
}

std::string join_levels(const std::vector<int>& levels) {
  std::string text;
  for (int level : levels) text += (text.empty() ? "" : ",") + std::to_string(level);
  return text;
}

// One demo run: where it writes, what it runs, and one step per chapter of its story.
class Demo {
 public:
  Demo(const DemoOptions& options, std::ostream& out, std::ostream& log)
      : options_(options), out_(out), stage_{log},
        dir_(options.dir.empty() ? default_demo_dir() : fs::absolute(options.dir)),
        traces_(options.traces.empty() ? dir_ / "datasets" : options.traces),
        levels_(options.quick ? std::vector<int>{1, 8} : std::vector<int>{1, 16, 32}),
        repeats_(options.quick ? 2 : 3),
        range_(options.quick ? "1..8" : "1..32") {
    // The recorder pass sends the gold requests unchanged (so their request keys still find the
    // gold answers); sweeps and bisect stream and ask for logprobs, which give every divergence
    // its near-tie margin.
    record_args_.timeout = "30s";
    record_args_.token_ids = "off";
    record_args_.no_stream = true;
    replay_args_ = record_args_;
    replay_args_.token_ids = "logprobs";
    replay_args_.no_stream = options.no_stream;
  }

  int run() {
    prepare_datasets();
    introduce();
    gold_questions();
    open_ended_prompts();
    conclude();
    return 0;
  }

 private:
  // The datasets compiled into the binary, written out unless --traces names a folder.
  void prepare_datasets() {
    if (options_.traces.empty()) {
      create_private_directories(traces_);
      for (const auto& [name, bytes] : options_.datasets) write_private_file(traces_ / name, bytes);
    }
    for (auto name : {"gold-intents.jsonl", "gold-intents.answers.jsonl", "open-ended.jsonl"})
      if (!fs::exists(traces_ / name))
        throw std::runtime_error((traces_ / name).string() + " is missing (--traces names the "
                                                             "folder holding the shipped traces)");
    create_private_directories(dir_);
  }

  void introduce() {
    out_ << "retrace demo — everything here runs against `retrace serve`, the BUILT-IN SIMULATOR\n"
            "(a small deterministic stand-in for a model, with a batching latency model), not a real\n"
            "model server. The commands at the end point the same experiment at a real one.\n"
            "To keep the demo short the simulator runs a cheaper latency model than its default\n"
            "(--decode-step-ms 1 --decode-ms-per-sequence 0.02 --prefill-ms-per-token 0.005).\n"
            "Writing everything to "
         << dir_.string() << "\n\n"
         << std::flush;
  }

  // The shipped trace of the gold set, or (in a tree without it) imported from its JSONL.
  fs::path gold_trace() {
    fs::path shipped = traces_ / "gold-intents.rtrace";
    if (fs::exists(shipped)) return shipped;
    fs::path imported = dir_ / "gold-intents.rtrace";
    ImportOptions import_options;
    import_options.tool_version = kToolVersion;
    import_dataset(traces_ / "gold-intents.jsonl", imported, import_options);
    return imported;
  }

  // Sends the gold set through `retrace record` in front of `upstream`; returns the recording.
  fs::path record_gold(const fs::path& gold, const std::string& upstream) {
    stage_.say("recording the 20 gold questions through `retrace record`");
    fs::path recording = dir_ / "gold-recorded.rtrace";
    Child recorder({options_.self.string(), "record", "--upstream", upstream, "--out",
                    recording.string(), "--listen", "127.0.0.1:0",
                    // Only the questions: not the replayer's own /v1/models and version probes.
                    "--include-path", "/v1/chat/completions"},
                   dir_ / "record.log");
    std::string recorder_url = recorder.wait_listening(30'000);
    stage_.say("recorder (pid " + std::to_string(recorder.pid()) + ") listening on " + recorder_url);
    LoadedTrace trace = load_requests(gold);
    replay_at(trace, gold.string(), record_args_, recorder_url, 1, {{"run", "through-recorder"}},
              dir_ / "gold-client-side.rtrace", options_.stop, nullptr);
    int status = recorder.stop(10'000);
    if (status != 0)
      throw std::runtime_error("`retrace record` exited with status " + std::to_string(status) +
                               "; see " + (dir_ / "record.log").string());
    return recording;
  }

  // 1. The gold questions: simulator with the gold answers, recorder in front of it, the
  // recording swept.
  void gold_questions() {
    fs::path gold = gold_trace();
    stage_.say("starting the simulator with the gold answers");
    auto command = serve_command(options_.self);
    command.insert(command.end(), {"--answers", (traces_ / "gold-intents.answers.jsonl").string()});
    Child server(command, dir_ / "serve-gold.log");
    std::string url = server.wait_listening(30'000);
    stage_.say("simulator (pid " + std::to_string(server.pid()) + ") listening on " + url);

    fs::path recording = record_gold(gold, url);
    std::size_t recorded = load_requests(recording).exchanges.size();
    out_ << "Recorded " << recorded << " exchanges through `retrace record` (upstream " << url
         << ") → " << recording.string() << "\n\n";

    stage_.say("sweeping the recording at concurrency " + join_levels(levels_) + " × " +
               std::to_string(repeats_));
    auto summary = sweep_into(recording, url, levels_, repeats_, dir_ / "gold-sweep",
                              gold.string(), replay_args_, options_, stage_.log);
    out_ << "## 1. Gold questions, concurrency " << join_levels(levels_) << " × " << repeats_
         << " repeats (server without batch variance)\n\n"
         << levels_table(summary) << "\n"
         << (summary.any_differs()
                 ? "Some outputs differ from the sequential baseline:\n" + divergence_list(summary, 10)
                 : "No output differs from the sequential baseline at any level: batching does not "
                   "change the answers here.\n")
         << "(The simulator's answer file gets 15 of the 20 gold questions right; a lower match "
            "count means answers came out cut short or changed.)\n"
         << "HTML report: " << (dir_ / "gold-sweep" / "report.html").string() << "\n\n"
         << std::flush;
    server.stop();
  }

  // 2. Open-ended prompts on a server whose reductions depend on the batch and on prefix-cache
  // hits, as real batched kernels and cached prefills can: `retrace study` measures both, each cell
  // against the control. Then 3: bisect on the same server.
  void open_ended_prompts() {
    stage_.say("starting a second simulator with --batch-variance --cache-variance");
    auto command = serve_command(options_.self);
    command.insert(command.end(), {"--batch-variance", "--cache-variance"});
    Child server(command, dir_ / "serve-batch-variance.log");
    std::string url = server.wait_listening(30'000);
    stage_.say("simulator with batch and cache variance (pid " + std::to_string(server.pid()) +
               ") listening on " + url);

    fs::path open_ended = dir_ / "open-ended.rtrace";
    ImportOptions import_options;
    import_options.tool_version = kToolVersion;
    import_dataset(traces_ / "open-ended.jsonl", open_ended, import_options);

    stage_.say("studying 20 open-ended prompts: concurrency " + join_levels(levels_) +
               " × cache cold,warm × " + std::to_string(repeats_));
    auto summary = study_into(open_ended, url, levels_, repeats_, dir_ / "open-ended-study", replay_args_,
                              options_, stage_.log);
    out_ << "## 2. Open-ended prompts (128 tokens): `retrace study`, server with --batch-variance "
            "and --cache-variance\n\n"
         << report::study_scope(summary) << "\n\n"
         << report::study_cells_table(summary) << "\n"
         << "First divergent tokens (margin = logprob gap between the two candidates; a near-tie "
            "is numeric noise, not a changed model):\n"
         << report::study_divergence_list(summary, 12) << "\n"
         << "Summary: " << (dir_ / "open-ended-study" / "summary.md").string()
         << "; HTML report (charts, and where outputs first part): "
         << (dir_ / "open-ended-study" / "report.html").string() << "\n\n"
         << std::flush;
    bisect(open_ended, url);
    server.stop();
  }

  // 3. Where does it start? Bisect the concurrency. Its requests skip the prefix cache
  // (cache_prompt false), so that only the concurrency changes from one probe to the next.
  void bisect(const fs::path& open_ended, const std::string& url) {
    stage_.say("bisecting the concurrency over " + range_);
    auto values = parse_range(range_);
    fs::path bisect_dir = dir_ / "bisect";
    create_private_directories(bisect_dir);
    LoadedTrace trace = load_requests(open_ended);
    BisectAxis axis;
    axis.name = "concurrency";
    for (int value : values) axis.point_labels.push_back("concurrency " + std::to_string(value));
    axis.diff = diff_options(Plan{}, false);
    ReplayArgs args = replay_args_;
    args.set.push_back("cache_prompt=false");
    axis.run_for = [&](std::size_t index) -> fs::path {
      int concurrency = values[index];
      return replay_at(trace, open_ended.string(), args, url, concurrency,
                       {{"run", "bisect-c" + std::to_string(concurrency)}},
                       bisect_dir / ("c" + std::to_string(concurrency) + ".rtrace"), options_.stop,
                       nullptr);
    };
    out_ << "## 3. Bisect: the smallest concurrency whose outputs differ from concurrency 1\n\n";
    run_bisect(axis, out_);
  }

  void conclude() {
    out_ << "\n## The same against a real server (vLLM, SGLang, TGI, llama.cpp, any "
            "OpenAI-compatible endpoint)\n\n"
         << "  retrace record --upstream http://YOUR-SERVER:8000 --out my.rtrace --listen 127.0.0.1:9000\n"
         << "      # point your client at http://127.0.0.1:9000, or: retrace import questions.jsonl --out my.rtrace\n"
         << "  retrace study my.rtrace --target http://YOUR-SERVER:8000 --concurrency 1,16,32 "
            "--cache cold,warm --repeat 3 --out my-study\n"
         << "  retrace bisect --over concurrency --range 1..64 --trace my.rtrace --target http://YOUR-SERVER:8000\n"
         << "  retrace diff " << (dir_ / "open-ended-study" / "baseline.rtrace").string() << " "
         << (dir_ / "open-ended-study" / ("c" + std::to_string(levels_.back()) + "-warm-r1.rtrace")).string()
         << "\n\n"
         << "Everything this demo wrote is in " << dir_.string() << " ("
         << stage_.seconds() << " s).\n"
         << std::flush;
  }

  const DemoOptions& options_;
  std::ostream& out_;
  Stage stage_;
  fs::path dir_, traces_;
  std::vector<int> levels_;
  int repeats_;
  std::string range_;
  ReplayArgs record_args_, replay_args_;
};

}  // namespace

int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& log) {
  return Demo(options, out, log).run();
}

}  // namespace retrace::demo
