// `retrace demo`: the whole story on a fresh machine, against the built-in simulator. Starts
// `retrace serve` (this same binary), records the gold questions through `retrace record`, sweeps
// the recording, then repeats with batch variance on over open-ended prompts and bisects the
// concurrency at which outputs start to differ. Every child process is stopped on every path out
// (Child's destructor), and everything written lands in one directory.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "format/import.hpp"
#include "sweep/sweep.hpp"
#include "version.hpp"

namespace retrace::sweep {

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

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The simulator's latency model, made cheaper than its defaults so the demo's 300-odd requests
// fit in well under 90 s on 2 cores, while throughput still responds to batching.
std::vector<std::string> serve_command(const fs::path& self) {
  return {self.string(), "serve", "--listen", "127.0.0.1:0", "--decode-step-ms", "1",
          "--decode-ms-per-sequence", "0.02", "--prefill-ms-per-token", "0.005"};
}

struct Stage {
  std::ostream& log;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  void say(const std::string& what) {
    log << "demo [" << static_cast<int>(seconds_since(start)) << " s] " << what << "\n" << std::flush;
  }
};

Summary sweep_into(const fs::path& trace, const std::string& target, const std::vector<int>& levels,
                   int repeats, const fs::path& dir, const std::string& answers_from,
                   const ReplayArgs& replay_args, const DemoOptions& options, std::ostream& log) {
  fs::create_directories(dir);
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

std::string join_levels(const std::vector<int>& levels) {
  std::string text;
  for (int level : levels) text += (text.empty() ? "" : ",") + std::to_string(level);
  return text;
}

}  // namespace

int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& log) {
  Stage stage{log};
  fs::path dir = options.dir.empty() ? default_demo_dir() : fs::absolute(options.dir);
  fs::path traces = options.traces.empty() ? dir / "datasets" : options.traces;
  if (options.traces.empty()) {
    fs::create_directories(traces);
    for (const auto& [name, bytes] : options.datasets) {
      std::ofstream file(traces / name, std::ios::binary);
      file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!file.flush()) throw std::runtime_error("cannot write " + (traces / name).string());
    }
  }
  for (auto name : {"gold-intents.jsonl", "gold-intents.answers.jsonl", "open-ended.jsonl"})
    if (!fs::exists(traces / name))
      throw std::runtime_error((traces / name).string() + " is missing (--traces names the folder "
                                                          "holding the shipped traces)");
  fs::create_directories(dir);
  const std::vector<int> levels = options.quick ? std::vector<int>{1, 8} : std::vector<int>{1, 16, 32};
  const int repeats = options.quick ? 2 : 3;
  const std::string range = options.quick ? "1..8" : "1..32";
  // The recorder pass sends the gold requests unchanged (so their request keys still find the
  // gold answers); sweeps and bisect stream and ask for logprobs, which give every divergence its
  // near-tie margin.
  ReplayArgs record_args;
  record_args.timeout = "30s";
  record_args.token_ids = "off";
  record_args.no_stream = true;
  ReplayArgs replay_args = record_args;
  replay_args.token_ids = "logprobs";
  replay_args.no_stream = options.no_stream;

  out << "retrace demo — everything here runs against `retrace serve`, the BUILT-IN SIMULATOR\n"
         "(a small deterministic stand-in for a model, with a batching latency model), not a real\n"
         "model server. The commands at the end point the same experiment at a real one.\n"
         "To keep the demo short the simulator runs a cheaper latency model than its default\n"
         "(--decode-step-ms 1 --decode-ms-per-sequence 0.02 --prefill-ms-per-token 0.005).\n"
         "Writing everything to "
      << dir.string() << "\n\n"
      << std::flush;

  // The shipped trace of the gold set, or (in a tree without it) imported from its JSONL.
  fs::path gold_trace = traces / "gold-intents.rtrace";
  if (!fs::exists(gold_trace)) {
    gold_trace = dir / "gold-intents.rtrace";
    ImportOptions import_options;
    import_options.tool_version = kToolVersion;
    import_dataset(traces / "gold-intents.jsonl", gold_trace, import_options);
  }

  // 1. The gold questions: simulator with the gold answers, recorder in front of it.
  stage.say("starting the simulator with the gold answers");
  auto gold_server_command = serve_command(options.self);
  gold_server_command.insert(gold_server_command.end(),
                             {"--answers", (traces / "gold-intents.answers.jsonl").string()});
  Child gold_server(gold_server_command, dir / "serve-gold.log");
  std::string gold_url = gold_server.wait_listening(30'000);
  stage.say("simulator (pid " + std::to_string(gold_server.pid()) + ") listening on " + gold_url);

  stage.say("recording the 20 gold questions through `retrace record`");
  fs::path recording = dir / "gold-recorded.rtrace";
  {
    Child recorder({options.self.string(), "record", "--upstream", gold_url, "--out",
                    recording.string(), "--listen", "127.0.0.1:0",
                    // Only the questions: not the replayer's own /v1/models and version probes.
                    "--include-path", "/v1/chat/completions"},
                   dir / "record.log");
    std::string recorder_url = recorder.wait_listening(30'000);
    stage.say("recorder (pid " + std::to_string(recorder.pid()) + ") listening on " + recorder_url);
    LoadedTrace gold = load_trace(gold_trace);
    replay_at(gold, record_args, recorder_url, 1, {{"run", "through-recorder"}},
              dir / "gold-client-side.rtrace", options.stop, nullptr);
    int status = recorder.stop(10'000);
    if (status != 0)
      throw std::runtime_error("`retrace record` exited with status " + std::to_string(status) +
                               "; see " + (dir / "record.log").string());
  }
  std::size_t recorded = load_trace(recording).exchanges.size();
  out << "Recorded " << recorded << " exchanges through `retrace record` (upstream " << gold_url
      << ") → " << recording.string() << "\n\n";

  stage.say("sweeping the recording at concurrency " + join_levels(levels) + " × " +
            std::to_string(repeats));
  auto gold_summary = sweep_into(recording, gold_url, levels, repeats, dir / "gold-sweep",
                                 gold_trace.string(), replay_args, options, log);
  out << "## 1. Gold questions, concurrency " << join_levels(levels) << " × " << repeats
      << " repeats (server without batch variance)\n\n"
      << levels_table(gold_summary) << "\n"
      << (gold_summary.any_differs()
              ? "Some outputs differ from the sequential baseline:\n" + divergence_list(gold_summary, 10)
              : "No output differs from the sequential baseline at any level: batching does not "
                "change the answers here.\n")
      << "(The simulator's answer file gets 15 of the 20 gold questions right; a lower match count "
         "means answers came out cut short or changed.)\n"
      << "HTML report: " << (dir / "gold-sweep" / "report.html").string() << "\n\n"
      << std::flush;
  gold_server.stop();

  // 2. Open-ended prompts with batch variance: the reductions depend on the batch, as real
  // batched kernels do, so near-ties flip under load.
  stage.say("starting a second simulator with --batch-variance");
  auto variance_command = serve_command(options.self);
  variance_command.push_back("--batch-variance");
  Child variance_server(variance_command, dir / "serve-batch-variance.log");
  std::string variance_url = variance_server.wait_listening(30'000);
  stage.say("simulator with batch variance (pid " + std::to_string(variance_server.pid()) +
            ") listening on " + variance_url);

  fs::path open_ended = dir / "open-ended.rtrace";
  ImportOptions import_options;
  import_options.tool_version = kToolVersion;
  import_dataset(traces / "open-ended.jsonl", open_ended, import_options);

  stage.say("sweeping 20 open-ended prompts at concurrency " + join_levels(levels) + " × " +
            std::to_string(repeats));
  auto variance_summary = sweep_into(open_ended, variance_url, levels, repeats,
                                     dir / "open-ended-sweep", "", replay_args, options, log);
  out << "## 2. Open-ended prompts (128 tokens), server with --batch-variance\n\n"
      << levels_table(variance_summary) << "\n"
      << "First divergent tokens (margin = logprob gap between the two candidates; a near-tie is "
         "numeric noise, not a changed model):\n"
      << divergence_list(variance_summary, 12) << "\n"
      << "HTML report (charts, and each divergent output token by token): "
      << (dir / "open-ended-sweep" / "report.html").string() << "\n\n"
      << std::flush;

  // 3. Where does it start? Bisect the concurrency, reusing the sweep's baseline run.
  stage.say("bisecting the concurrency over " + range);
  auto range_values = parse_range(range);
  fs::path bisect_dir = dir / "bisect";
  fs::create_directories(bisect_dir);
  LoadedTrace open_ended_trace = load_trace(open_ended);
  BisectAxis axis;
  axis.name = "concurrency";
  for (int value : range_values) axis.point_labels.push_back("concurrency " + std::to_string(value));
  axis.diff = diff_options(Plan{}, false);
  const fs::path sweep_baseline = dir / "open-ended-sweep" / "c1-r1.rtrace";
  axis.run_for = [&](std::size_t index) -> fs::path {
    int concurrency = range_values[index];
    if (index == 0 && concurrency == 1) return sweep_baseline;
    return replay_at(open_ended_trace, replay_args, variance_url, concurrency,
                     {{"run", "bisect-c" + std::to_string(concurrency)}},
                     bisect_dir / ("c" + std::to_string(concurrency) + ".rtrace"), options.stop,
                     nullptr);
  };
  out << "## 3. Bisect: the smallest concurrency whose outputs differ from concurrency 1\n\n";
  run_bisect(axis, out);
  variance_server.stop();

  out << "\n## The same against a real server (vLLM, SGLang, TGI, llama.cpp, any OpenAI-compatible "
         "endpoint)\n\n"
      << "  retrace record --upstream http://YOUR-SERVER:8000 --out my.rtrace --listen 127.0.0.1:9000\n"
      << "      # point your client at http://127.0.0.1:9000, or: retrace import questions.jsonl --out my.rtrace\n"
      << "  retrace sweep my.rtrace --target http://YOUR-SERVER:8000 --concurrency " << "1,16,32"
      << " --repeat 3 --token-ids logprobs --set stream=true --out my-sweep\n"
      << "  retrace bisect --over concurrency --range 1..64 --trace my.rtrace --target http://YOUR-SERVER:8000\n"
      << "  retrace diff " << (dir / "open-ended-sweep" / "c1-r1.rtrace").string() << " "
      << (dir / "open-ended-sweep" / ("c" + std::to_string(levels.back()) + "-r1.rtrace")).string() << "\n\n"
      << "Everything this demo wrote is in " << dir.string() << " ("
      << static_cast<int>(seconds_since(stage.start)) << " s).\n"
      << std::flush;
  return 0;
}

}  // namespace retrace::sweep
