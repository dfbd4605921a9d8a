// `retrace replay TRACE --target URL --out RUN.rtrace (-c N | --rate R | --timing recorded)`.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "cli/output_flags.hpp"
#include "cli/replay_flags.hpp"
#include "format/trace.hpp"
#include "base/stop_signals.hpp"
#include "replay/feed.hpp"
#include "replay/preflight.hpp"
#include "replay/replay.hpp"
#include "replay/shard.hpp"
#include "report/replay_report.hpp"
#include "report/request_rows.hpp"

namespace retrace::cli {
namespace {

struct ReplayArgs {
  std::string input;
  std::string target;
  std::string out;
  std::optional<int> concurrency;
  std::optional<std::string> rate;        // a number, or "inf": everything at once
  replay::ScheduleFlags schedule;        // --arrival, --burstiness (shared with sweep)
  std::string timing;
  double speed = 1;
  bool sessions = false;
  std::string session_mode = "recorded";
  int repeat = 1;
  replay::RequestFlags request;  // shared with sweep and bisect
  std::string slo;
  std::string shard;
  std::string start_at;
  OutputFlags output;
  std::string run_name;
  bool force = false;
};

replay::Options make_options(const ReplayArgs& args) {
  replay::Options options;
  options.target = args.target;
  // --rate inf is vllm bench serve's "send everything at once": a closed loop with one slot per
  // request, or --max-concurrency of them.
  bool all_at_once = args.rate && (*args.rate == "inf" || *args.rate == "infinity");
  int schedules = (args.concurrency || all_at_once ? 1 : 0) + (args.rate && !all_at_once ? 1 : 0) +
                  (args.timing.empty() ? 0 : 1);
  if (schedules != 1)
    throw std::invalid_argument(
        "give exactly one schedule: -c N (closed loop), --rate R (open loop) or --timing recorded "
        "(-c N --rate inf: N at a time, as vllm bench serve's --max-concurrency N --request-rate inf)");
  if ((args.schedule.arrival || args.schedule.burstiness) && (!args.rate || all_at_once))
    throw std::invalid_argument("--arrival and --burstiness shape an open loop: give --rate R (a number)");
  if (args.concurrency || all_at_once) {
    options.schedule.kind = replay::ScheduleKind::concurrency;
    options.schedule.concurrency = args.concurrency.value_or(0);  // 0: one per request, set by run()
    if (args.concurrency) replay::check_concurrency(*args.concurrency, "-c/--concurrency");
  } else if (args.rate) {
    options.schedule.kind = replay::ScheduleKind::rate;
    options.schedule.rate = replay::parse_rate(*args.rate);  // "inf" was taken above
    replay::apply_schedule_flags(args.schedule, options.schedule);
  } else {
    if (args.timing != "recorded")
      throw std::invalid_argument("--timing takes 'recorded' (the trace's own send times)");
    options.schedule.kind = replay::ScheduleKind::recorded;
    options.schedule.speed = replay::check_speed(args.speed);
  }
  if (args.session_mode != "recorded" && args.session_mode != "live")
    throw std::invalid_argument("--session-mode must be recorded or live");
  options.live_sessions = args.session_mode == "live";
  options.sessions = args.sessions || options.live_sessions;
  replay::apply_request_flags(args.request, options);
  if (!args.slo.empty()) options.slo = replay::parse_slo(args.slo);
  if (!args.shard.empty())
    std::tie(options.shard_index, options.shard_count) = replay::parse_shard(args.shard);
  if (!args.start_at.empty()) {
    if (args.repeat > 1)
      throw std::invalid_argument("--start-at starts one run at one instant; drop --repeat, or run "
                                  "each repeat with its own --start-at");
    options.start_at_unix_ns = replay::parse_start_at(args.start_at);
    // Early, before the trace loads; run_replay checks again just before the traffic.
    replay::check_start_at(*options.start_at_unix_ns,
                           std::chrono::duration_cast<std::chrono::nanoseconds>(
                               options.clock->wall().time_since_epoch())
                               .count());
  }
  options.run_name = args.run_name;
  options.input = args.input;
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
  for (int k = 1; k <= args.repeat; ++k)
    check_output_file(replay::repeat_path(args.out, k, args.repeat), {args.input}, args.force, "--out");
  // The input is read as it is sent, in bounded memory (replay/feed.hpp); a run with sessions,
  // recorded timing or a time window is planned from a first pass and reads each body when its
  // chain comes up (replay/planner.hpp).
  auto input = replay::scan_input(args.input, options, std::cerr, "retrace");
  if (options.schedule.kind == replay::ScheduleKind::concurrency && options.schedule.concurrency == 0)
    options.schedule.concurrency = static_cast<int>(std::min<std::size_t>(
        std::max(input.exchanges, options.requests.value_or(0)), replay::kMaxInFlight));

  // Once for every repeat: nothing answering, or an ambiguous model, stops here (exit 2).
  options.preflight = std::make_shared<const replay::Preflight>(
      replay::preflight(input.facts, options));
  for (const auto& note : options.preflight->notes) std::cerr << "retrace: " << note << "\n";

  bool tty = ::isatty(STDERR_FILENO) != 0;
  std::atomic<bool> stop{false};
  StopOnSignals signals(stop, "\nretrace: stopping: cutting requests in flight and flushing the trace "
                              "(Ctrl-C again to quit at once)\n");
  std::vector<std::string> json_reports;
  bool interrupted = false;
  std::size_t failed = 0, total = 0, sent_redacted = 0;
  for (int k = 1; k <= args.repeat && !interrupted; ++k) {
    auto run_options = options;
    if (args.repeat > 1) run_options.repeat_index = k;
    auto out = replay::repeat_path(args.out, k, args.repeat);
    if (run_options.run_name.empty()) run_options.run_name = replay::repeat_path(args.out, 1, 1).stem().string();
    std::function<void(const replay::Progress&)> progress;
    if (tty) progress = draw_progress;
    if (options.start_at_unix_ns) {
      auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     options.clock->wall().time_since_epoch())
                     .count();
      std::fprintf(stderr, "retrace: the schedule starts at %s (in %.1f s); waiting (Ctrl-C stops)\n",
                   replay::format_rfc3339(*options.start_at_unix_ns).c_str(),
                   static_cast<double>(*options.start_at_unix_ns - now) / 1e9);
    }
    auto result = replay::run_replay(input, run_options, out, &stop, progress);
    if (tty) std::fprintf(stderr, "\n");
    interrupted = result.interrupted;
    sent_redacted += result.sent_redacted;
    total += result.stats.exchanges;
    failed += result.stats.exchanges - result.stats.completed;
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
  std::cout.flush();
  if (sent_redacted) std::cerr << "retrace: " << replay::sent_redacted_note(sent_redacted) << "\n";
  if (interrupted) return 130;
  if (auto verdict = replay::failure_verdict(failed, total, args.request.max_error_rate)) {
    // Replay prints no error per request: each is in the run's trace.
    std::cerr << "retrace: " << *verdict << "; `retrace cat " << args.out
              << "` shows each failed request and its error\n";
    return kExitRequestsFailed;
  }
  return kExitOk;
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
      "vllm bench serve's flags work too: --max-concurrency N, --request-rate R|inf, --burstiness B.\n"
      "--repeat K writes RUN.r1.rtrace ... RUN.rK.rtrace, each labelled repeat=k.\n"
      "Before any traffic the target is reached, its /v1/models read and the server identified "
      "(recorded in the run's header); a --target ending in /v1 is its root.\n"
      "Ctrl-C stops cleanly: in-flight requests are recorded as cut, the trace is flushed.\n"
      "Exit status: 0 all requests completed (or failures within --max-error-rate), 1 more "
      "requests failed, 2 nothing could run (bad input, nothing answers at the target, several "
      "models and no --model), 130 interrupted.");
  command->add_option("trace", args->input, "Trace to replay (.rtrace)")->required();
  command->add_option("--target", args->target, "Base URL of the server, e.g. http://127.0.0.1:8000")
      ->required();
  command->add_option("--out,-o", args->out, "Output trace of this run")->required();
  add_force_flag(*command, args->force, "Replace an existing --out (never the input trace)");
  command->add_option("-c,--concurrency,--max-concurrency", args->concurrency,
                      "Closed loop: N requests in flight (at most 100000)");
  command->add_option("--rate,--request-rate", args->rate,
                      "Open loop: requests (sessions, with --sessions) per second; inf: all at once, "
                      "up to 100000 (with -c N: N at a time)")
      ->type_name("R|inf");
  add_schedule_flags(*command, args->schedule, "Open-loop arrivals");
  command->add_option("--timing", args->timing, "'recorded': the trace's own send times");
  command->add_option("--speed", args->speed, "With --timing recorded: 2 = twice as fast")
      ->capture_default_str();
  command->add_flag("--sessions", args->sessions,
                    "A session's exchanges run in recorded order, one after another");
  command->add_option("--session-mode", args->session_mode,
                      "recorded, or live: chat turns carry this run's earlier answers (choice 0 of an "
                      "answer with n > 1), and its tool calls where they are the recorded calls")
      ->capture_default_str();
  command->add_option("--repeat", args->repeat, "Run K times into K traces")->capture_default_str();
  add_request_flags(*command, args->request);
  command->add_option("--run-name", args->run_name, "Label 'run' (default: the output's name)");
  command->add_option("--slo", args->slo, "Goodput objective, e.g. ttft:200ms,tpot:50ms,e2e:2s; ttft:16tpot: the first token within 16 of the "
                      "request's own TPOT (a wait measured in the server's pace, whatever the machine's speed)");
  command->add_option("--shard", args->shard,
                      "I/N: only every N-th exchange (session) from I; --rate and --timing recorded "
                      "keep the whole trace's send times, -c is per shard; join with `retrace merge`");
  command->add_option("--start-at", args->start_at,
                      "Start the schedule's clock at this wall-clock instant (waiting for it): RFC "
                      "3339 with a zone, e.g. 2026-12-01T10:00:00Z, or epoch seconds; more than 1 s "
                      "in the past is an error")
      ->type_name("TIME");
  add_output_flags(*command, args->output,
                   "Print one CSV row per request of the run (every repeat's rows under one header)");
  registry.add(command, [args] { return run(*args); });
}

}  // namespace retrace::cli
