// `retrace replay TRACE --target URL --out RUN.rtrace (-c N | --rate R | --timing recorded)`.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/output_flags.hpp"
#include "cli/replay_flags.hpp"
#include "format/trace.hpp"
#include "replay/replay.hpp"
#include "report/replay_report.hpp"
#include "report/request_rows.hpp"

namespace retrace::cli {
namespace {

struct ReplayArgs {
  std::string input;
  std::string target;
  std::string out;
  std::optional<int> concurrency;
  std::optional<double> rate;
  std::string arrival = "poisson";
  double burstiness = 1;
  std::string timing;
  double speed = 1;
  std::uint64_t seed = 1;
  bool sessions = false;
  std::string session_mode = "recorded";
  int repeat = 1;
  replay::RequestFlags request;  // shared with sweep and bisect
  std::string slo;
  std::string shard;
  OutputFlags output;
  std::string run_name;
};

// SIGINT/SIGTERM are blocked in every thread and taken by one waiting thread, which turns them
// into the stop flag the replay polls: no async-signal-safety puzzles, no global.
class StopOnSignal {
 public:
  StopOnSignal() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    // A shell starts background jobs with SIGINT ignored, and an ignored signal is discarded
    // before sigtimedwait could take it; blocked, the default action never runs.
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
    waiter_ = std::thread([this] {
      timespec slice{0, 100'000'000};
      while (!done_.load()) {
        if (sigtimedwait(&signals_, nullptr, &slice) > 0) {
          if (stop_.load()) std::_Exit(130);  // a second Ctrl-C: the user means it
          stop_ = true;
          std::cerr << "\nretrace: stopping: cutting requests in flight and flushing the trace "
                       "(Ctrl-C again to quit at once)\n";
        }
      }
    });
  }
  ~StopOnSignal() {
    done_ = true;
    waiter_.join();
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  const std::atomic<bool>& flag() const { return stop_; }

 private:
  sigset_t signals_{}, previous_{};
  std::atomic<bool> stop_{false}, done_{false};
  std::thread waiter_;
};

replay::Options make_options(const ReplayArgs& args) {
  replay::Options options;
  options.target = args.target;
  int schedules = (args.concurrency ? 1 : 0) + (args.rate ? 1 : 0) + (args.timing.empty() ? 0 : 1);
  if (schedules != 1)
    throw std::invalid_argument(
        "give exactly one schedule: -c N (closed loop), --rate R (open loop) or --timing recorded");
  if (args.concurrency) {
    options.schedule.kind = replay::ScheduleKind::concurrency;
    options.schedule.concurrency = *args.concurrency;
    if (*args.concurrency < 1) throw std::invalid_argument("-c/--concurrency must be at least 1");
  } else if (args.rate) {
    options.schedule.kind = replay::ScheduleKind::rate;
    options.schedule.rate = *args.rate;
    if (!(*args.rate > 0) || !std::isfinite(*args.rate))
      throw std::invalid_argument("--rate must be a number above 0 (requests per second)");
    auto arrival = replay::arrival_from_string(args.arrival);
    if (!arrival) throw std::invalid_argument("--arrival must be poisson, constant or gamma");
    options.schedule.arrival = *arrival;
    if (!(args.burstiness > 0)) throw std::invalid_argument("--burstiness must be above 0");
    options.schedule.burstiness = args.burstiness;
  } else {
    if (args.timing != "recorded")
      throw std::invalid_argument("--timing takes 'recorded' (the trace's own send times)");
    options.schedule.kind = replay::ScheduleKind::recorded;
    // Recorded offsets divided by the speed must stay within int64 nanoseconds: a speed of
    // 1e-300 would overflow them.
    if (!(args.speed >= 1e-6 && args.speed <= 1e6))
      throw std::invalid_argument("--speed must be between 0.000001 and 1000000 (2 = twice as fast)");
    options.schedule.speed = args.speed;
  }
  options.seed = args.seed;
  if (args.session_mode != "recorded" && args.session_mode != "live")
    throw std::invalid_argument("--session-mode must be recorded or live");
  options.live_sessions = args.session_mode == "live";
  options.sessions = args.sessions || options.live_sessions;
  replay::apply_request_flags(args.request, options);
  if (!args.slo.empty()) options.slo = replay::parse_slo(args.slo);
  if (!args.shard.empty())
    std::tie(options.shard_index, options.shard_count) = replay::parse_shard(args.shard);
  options.run_name = args.run_name;
  return options;
}

// "[#####.....] 120/400  errors 3" redrawn in place; only on a terminal.
void draw_progress(const replay::Progress& progress) {
  constexpr int kWidth = 30;
  int filled = progress.total ? static_cast<int>(kWidth * progress.done / progress.total) : 0;
  filled = std::min(filled, kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r[%s] %zu/%zu  errors %zu ", bar.c_str(), progress.done, progress.total,
               progress.errors);
  std::fflush(stderr);
}

int run(const ReplayArgs& args) {
  auto options = make_options(args);
  if (args.repeat < 1) throw std::invalid_argument("--repeat must be at least 1");
  auto input = load_trace(args.input);
  if (input.recovery.torn)
    std::cerr << "retrace: warning: " << args.input << " has a torn tail (" << input.recovery.reason
              << "); replaying the " << input.exchanges.size() << " exchanges before it\n";
  if (input.exchanges.empty())
    throw std::invalid_argument(args.input + " holds no exchanges to replay");

  bool tty = ::isatty(STDERR_FILENO) != 0;
  StopOnSignal signals;
  std::vector<std::string> json_reports;
  bool interrupted = false;
  for (int k = 1; k <= args.repeat && !interrupted; ++k) {
    auto run_options = options;
    if (args.repeat > 1) run_options.repeat_index = k;
    auto out = replay::repeat_path(args.out, k, args.repeat);
    if (run_options.run_name.empty()) run_options.run_name = replay::repeat_path(args.out, 1, 1).stem().string();
    std::function<void(const replay::Progress&)> progress;
    if (tty) progress = draw_progress;
    auto result = replay::run_replay(input, run_options, out, &signals.flag(), progress);
    if (tty) std::fprintf(stderr, "\n");
    interrupted = result.interrupted;
    auto context = stats_context(args.output);
    context.title = out.string();
    context.interrupted = result.interrupted;
    context.header = report::header_of_trace(out.string());
    if (args.output.csv) {
      report::RequestRowOptions rows;
      rows.header_row = k == 1;  // every repeat's rows under one header
      report::write_request_rows(out.string(), std::cout, rows);
    } else if (args.output.json) {
      json_reports.push_back(report::render_stats_json(result.stats, context));
    } else {
      std::cout << (args.output.markdown ? report::render_stats_markdown(result.stats, context)
                                         : report::render_stats_text(result.stats, context));
      if (k < args.repeat) std::cout << "\n";
      std::cout.flush();
    }
  }
  if (args.output.json) std::cout << report::join_json_reports(json_reports);
  return interrupted ? 130 : kExitOk;
}

}  // namespace

void add_replay(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<ReplayArgs>();
  auto* command = root.add_subcommand(
      "replay",
      "Re-issue a trace's requests against a target under one schedule and record the run as a "
      "new trace, with latency and throughput figures.");
  command->footer(
      "Example:\n"
      "  retrace replay prod.rtrace --target http://127.0.0.1:8000 --out run.rtrace -c 16\n"
      "  retrace replay prod.rtrace --target http://gpu:8000 --out run.rtrace --rate 5 --slo ttft:200ms\n"
      "--repeat K writes RUN.r1.rtrace ... RUN.rK.rtrace, each labelled repeat=k.\n"
      "Ctrl-C stops cleanly: in-flight requests are recorded as cut, the trace is flushed.");
  command->add_option("trace", args->input, "Trace to replay (.rtrace)")->required();
  command->add_option("--target", args->target, "Base URL of the server, e.g. http://127.0.0.1:8000")
      ->required();
  command->add_option("--out,-o", args->out, "Output trace of this run")->required();
  command->add_option("-c,--concurrency", args->concurrency, "Closed loop: N requests in flight");
  command->add_option("--rate", args->rate, "Open loop: requests (sessions, with --sessions) per second");
  command->add_option("--arrival", args->arrival, "Open-loop arrivals: poisson, constant or gamma")
      ->capture_default_str();
  command->add_option("--burstiness", args->burstiness, "Gamma shape (1 = Poisson, < 1 burstier)")
      ->capture_default_str();
  command->add_option("--seed", args->seed, "Seed of the arrival process")->capture_default_str();
  command->add_option("--timing", args->timing, "'recorded': the trace's own send times");
  command->add_option("--speed", args->speed, "With --timing recorded: 2 = twice as fast")
      ->capture_default_str();
  command->add_flag("--sessions", args->sessions,
                    "A session's exchanges run in recorded order, one after another");
  command->add_option("--session-mode", args->session_mode,
                      "recorded, or live: chat turns carry this run's earlier answers")
      ->capture_default_str();
  command->add_option("--repeat", args->repeat, "Run K times into K traces")->capture_default_str();
  add_request_flags(*command, args->request);
  command->add_option("--run-name", args->run_name, "Label 'run' (default: the output's name)");
  command->add_option("--slo", args->slo, "Goodput objective, e.g. ttft:200ms,tpot:50ms,e2e:2s");
  command->add_option("--shard", args->shard, "I/N: only every N-th exchange (session) from I");
  add_output_flags(*command, args->output,
                   "Print one CSV row per request of the run (every repeat's rows under one header)");
  registry.add(command, [args] { return run(*args); });
}

}  // namespace retrace::cli
