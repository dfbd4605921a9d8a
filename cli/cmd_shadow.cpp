// `retrace shadow`: record's proxy in front of a primary, mirroring to a candidate and a control
// (shadow/shadow.hpp).
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <tuple>
#include <utility>

#include "cli/commands.hpp"
#include "cli/durations.hpp"
#include "cli/output_flags.hpp"
#include "cli/outputs.hpp"
#include "net/arrived_body.hpp"
#include "shadow/shadow.hpp"

namespace retrace::cli {

namespace {

struct ShadowArgs {
  std::string primary, candidate, control, out;
  std::string listen = "127.0.0.1:8080";
  double sample = 1.0;
  std::uint64_t seed = 0;
  std::size_t mirror_queue = 1024;
  unsigned mirror_concurrency = 64;
  std::vector<std::string> candidate_headers, control_headers;
  std::chrono::milliseconds duration{0};
  std::uint64_t max_pairs = 0;
  double fail_if_excess = -1;
  std::chrono::milliseconds report_every{10'000};
  std::string admin_listen;
  std::string session_header;
  std::vector<std::string> redact_headers;
  bool keep_secrets = false;
  std::size_t max_body = 32u << 20;
  std::uint64_t max_response_bytes = net::kDefaultMaxResponseBytes;
  std::chrono::milliseconds upstream_timeout{60'000};
  std::chrono::milliseconds drain_timeout{5000};
  unsigned threads = 0;
  double near_tie = diff::kDefaultNearTieMargin;
  std::chrono::milliseconds scrape_interval{0};  // 0: not asked for (as record: not unasked)
  std::string primary_scrape_url, control_scrape_url, candidate_scrape_url;
  bool no_scrape = false;
};

// --candidate-header NAME=ENV: the header NAME with the value of the environment variable ENV.
std::vector<HttpHeader> credentials(const std::vector<std::string>& specs, std::string_view flag) {
  std::vector<HttpHeader> headers;
  for (const auto& spec : specs) {
    auto equals = spec.find('=');
    if (equals == 0 || equals == std::string::npos || equals + 1 == spec.size())
      throw std::invalid_argument(std::string(flag) + " " + spec +
                                  ": expected NAME=ENV, a header name and the environment variable "
                                  "holding its value (e.g. Authorization=CANDIDATE_AUTH)");
    auto env = spec.substr(equals + 1);
    const char* value = std::getenv(env.c_str());
    if (!value)
      throw std::invalid_argument(std::string(flag) + " " + spec + ": the environment variable " + env +
                                  " is not set (export it with the header's value, e.g. \"Bearer sk-...\")");
    headers.push_back({spec.substr(0, equals), value});
  }
  return headers;
}

int run_shadow(const ShadowArgs& args) {
  shadow::ShadowOptions options;
  options.proxy.upstream = net::parse_url(args.primary);
  options.candidate = net::parse_url(args.candidate);
  if (!args.control.empty()) options.control = net::parse_url(args.control);
  shadow::check_legs(options);
  std::error_code ec;
  if (std::filesystem::exists(args.out, ec) && !std::filesystem::is_empty(args.out, ec))
    throw std::invalid_argument("--out " + args.out +
                                " exists and is not empty: shadow writes a new run's legs there; "
                                "choose a new directory");
  options.out = args.out;
  options.proxy.listen = net::parse_listen(args.listen);
  options.proxy.sample = args.sample;
  options.proxy.seed = args.seed;
  options.proxy.session_header = args.session_header;
  options.proxy.redact_headers = args.redact_headers;
  options.proxy.keep_secrets = args.keep_secrets;  // record's switch: the three traces' Redactors
  options.proxy.max_body = args.max_body;
  options.proxy.max_response_bytes = net::check_max_response_bytes(args.max_response_bytes);
  options.proxy.upstream_timeout = args.upstream_timeout;
  options.proxy.duration = args.duration;
  options.proxy.drain_timeout = args.drain_timeout;
  options.proxy.threads = args.threads;
  options.proxy.live_status = false;
  // Every leg's /metrics into its own trace, when any scrape flag asks (record's rule).
  const bool scrape = !args.no_scrape && (args.scrape_interval.count() > 0 || !args.primary_scrape_url.empty() ||
                                          !args.control_scrape_url.empty() || !args.candidate_scrape_url.empty());
  for (auto [settings, url] : {std::pair{&options.proxy.scrape, &args.primary_scrape_url},
                               std::pair{&options.control_scrape, &args.control_scrape_url},
                               std::pair{&options.candidate_scrape, &args.candidate_scrape_url}}) {
    settings->enabled = scrape;
    settings->interval = args.scrape_interval.count() > 0 ? args.scrape_interval : std::chrono::seconds(1);
    settings->url = *url;
  }
  if (!args.admin_listen.empty()) options.proxy.admin_listen = net::parse_listen(args.admin_listen);
  options.proxy.on_admin_listening = [](const std::string& url) { std::cout << "admin on " << url << std::endl; };
  options.candidate_headers = credentials(args.candidate_headers, "--candidate-header");
  options.control_headers = credentials(args.control_headers, "--control-header");
  if (!args.control_headers.empty() && !options.control)
    throw std::invalid_argument("--control-header needs --control URL");
  options.mirror_queue = args.mirror_queue;
  options.mirror_concurrency = args.mirror_concurrency;
  options.max_pairs = args.max_pairs;
  options.report_every = args.report_every;
  if (args.fail_if_excess >= 0) options.fail_if_excess = args.fail_if_excess;
  options.diff.near_tie = args.near_tie;

  if (args.keep_secrets)
    warn_keep_secrets("shadow", args.out + (options.control ? " (the primary's, control's and candidate's traces)"
                                                             : " (the primary's and candidate's traces)"));
  auto result = shadow::run_shadow(
      options, [](const std::string& url) { std::cout << "listening on " << url << std::endl; }, std::cerr,
      Clock::system());
  std::cerr << shadow::final_lines(result.verdict, result.facts);
  if (!result.primary.write_error.empty()) {
    std::cerr << "retrace shadow: ERROR: the primary's trace could not be written to the end: "
              << result.primary.write_error << "\n";
    return kExitError;
  }
  return result.gate_failed ? kExitDiffer : kExitOk;
}

}  // namespace

void add_shadow(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<ShadowArgs>();
  auto* command = root.add_subcommand(
      "shadow",
      "Try a candidate deployment on live traffic: clients are answered by the primary, byte for byte "
      "as through `record`; each sampled request is mirrored off their path to the candidate and to a "
      "control (a second replica of the primary), and every answer compared token by token with the "
      "primary's. Exit 0, 1 when --fail-if-excess fails, 2 on error.");
  command->add_option("--primary", args->primary, "The server that answers the clients (http:// or https://)")
      ->required();
  command->add_option("--candidate", args->candidate, "The deployment under test: gets a copy of each sampled request")
      ->required();
  command->add_option("--control", args->control,
                      "A second replica of the primary's deployment: its differences are the noise floor");
  command->add_option("--out,-o", args->out,
                      "A new directory: DIR/primary/, DIR/control/, DIR/candidate/ (segments, as `record "
                      "--out DIR/`), DIR/summary.json, DIR/summary.md and DIR/report.html")
      ->required();
  command->add_option("--listen", args->listen, "HOST:PORT to listen on; port 0 picks a free one")
      ->capture_default_str();
  command->add_option("--sample", args->sample, "Fraction of sessions recorded and mirrored (0 to 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--seed", args->seed, "Seed of --sample's choice");
  command->add_option("--mirror-queue", args->mirror_queue,
                      "Requests waiting per mirror; past it a request is dropped and counted, never a client delayed")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  command->add_option("--mirror-concurrency", args->mirror_concurrency, "Requests in flight per mirror")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  command->add_option("--candidate-header", args->candidate_headers,
                      "NAME=ENV: send the candidate header NAME with the value of environment variable ENV "
                      "(repeatable); the client's credentials are never sent to a mirror");
  command->add_option("--control-header", args->control_headers, "NAME=ENV, as --candidate-header, for the control");
  add_duration_option(*command, "--duration", args->duration,
                      "Stop by itself after this long, e.g. 1h (default: until stopped)", std::chrono::milliseconds(1));
  command->add_option("--max-pairs", args->max_pairs, "Stop once this many candidate pairs were compared");
  command->add_option("--fail-if-excess", args->fail_if_excess,
                      "Exit 1 when the lower 95 % bound of the candidate's excess difference rate over the "
                      "control (Newcombe) is above this, e.g. 0.02")
      ->check(CLI::Range(-1.0, 1.0));
  add_duration_option(*command, "--report-every", args->report_every,
                      "Rewrite DIR/summary.json, summary.md and report.html this often", std::chrono::milliseconds(10))
      ->default_str(format_duration(args->report_every));
  command->add_option("--admin-listen", args->admin_listen,
                      "HOST:PORT for /healthz, /readyz and /metrics (with the verdict's figures)");
  add_duration_option(*command, "--scrape-interval", args->scrape_interval,
                      "Scrape each leg's Prometheus /metrics this often into that leg's trace (a baseline at "
                      "the start, one after the drain; `retrace export --metrics DIR/LEG` prints them). Off "
                      "unless this or a --*-scrape-url is given; with a URL alone, every 1s",
                      std::chrono::milliseconds(10));
  for (auto [name, leg, url] : {std::tuple{"--primary-scrape-url", "the primary's", &args->primary_scrape_url},
                                std::tuple{"--control-scrape-url", "the control's", &args->control_scrape_url},
                                std::tuple{"--candidate-scrape-url", "the candidate's", &args->candidate_scrape_url}})
    command->add_option(name, *url,
                        std::string(leg) + " metrics page's own URL, when served on a port of its own (default: "
                        "its /metrics); turns scraping on")
        ->type_name("URL");
  command->add_flag("--no-scrape", args->no_scrape, "Do not scrape the legs' /metrics (the default)");
  command->add_option("--session-header", args->session_header,
                      "Request header whose value names a session (--sample keeps whole sessions)");
  command->add_option("--redact-header", args->redact_headers, "Also redact this header in the traces (repeatable)");
  add_keep_secrets_flag(*command, args->keep_secrets);
  command->add_option("--max-body", args->max_body, "Largest request body in bytes (413 above)")->capture_default_str();
  command->add_option("--max-response-bytes", args->max_response_bytes,
                      "Cut a recorded response past this many bytes as received")
      ->capture_default_str()
      ->type_name("N");
  add_duration_option(*command, "--upstream-timeout", args->upstream_timeout,
                      "How long to wait for a server to connect or send more bytes", std::chrono::milliseconds(1))
      ->default_str(format_duration(args->upstream_timeout));
  add_duration_option(*command, "--drain-timeout", args->drain_timeout,
                      "At the end, how long exchanges in flight (and queued mirror requests) may finish")
      ->default_str(format_duration(args->drain_timeout));
  command->add_option("--threads", args->threads, "Proxy threads (0: one per core)")->capture_default_str();
  add_near_tie_option(*command, args->near_tie,
                      "Logprob margin (nats) under which a difference is a near-tie (numeric noise)");
  command->footer(
      "Example:\n  retrace shadow --primary http://prod:8000 --control http://prod-b:8000 \\\n"
      "    --candidate http://canary:8000 --out shadow-run --listen 0.0.0.0:8080 \\\n"
      "    --duration 1h --fail-if-excess 0.02\n"
      "  retrace diff shadow-run   # primary against control and candidate, token by token");
  registry.add(command, [args] { return run_shadow(*args); });
}

}  // namespace retrace::cli
