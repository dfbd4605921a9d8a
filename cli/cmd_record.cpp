// `retrace record`: the recording reverse proxy (record/record.hpp).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/durations.hpp"
#include "cli/outputs.hpp"
#include "net/arrived_body.hpp"
#include "net/url.hpp"
#include "record/record.hpp"

namespace retrace::cli {

namespace {

struct RecordArgs {
  std::string upstream;
  std::string out;
  std::string listen = "127.0.0.1:8080";
  std::string session_header;
  std::vector<std::string> redact_headers;
  bool keep_secrets = false;
  std::vector<std::string> include_paths;
  std::vector<std::string> exclude_paths;
  std::size_t max_body = 32u << 20;
  std::uint64_t max_response_bytes = net::kDefaultMaxResponseBytes;
  std::chrono::milliseconds flush_interval{1000};
  std::size_t flush_every = 64;
  std::string ca_file;
  bool insecure = false;
  std::chrono::milliseconds upstream_timeout{60'000};
  std::chrono::milliseconds duration{0};  // 0: until stopped
  std::uint64_t max_exchanges = 0;
  std::chrono::milliseconds drain_timeout{5000};
  unsigned threads = 0;
  bool no_server_info = false;
  bool force = false;
  double sample = 1.0;
  std::uint64_t seed = 0;
  std::string admin_listen;
  bool admin_listen_any = false;
  std::chrono::milliseconds rotate_every{0};
  std::uint64_t rotate_size = 0;
  std::uint64_t max_disk = 0;
  std::chrono::milliseconds keep_for{0};
  std::chrono::milliseconds scrape_interval{0};  // 0: not asked for (record does not scrape unasked)
  std::string scrape_url;
  bool no_scrape = false;
  bool derive_tokens = false;
};

// "; N sampled out, N probes, N excluded by path kept out": what was forwarded and not recorded.
std::string kept_out(const record::RecordSummary& summary) {
  std::string text;
  auto add = [&](std::uint64_t count, const char* what) {
    if (count) text += (text.empty() ? "" : ", ") + std::to_string(count) + what;
  };
  add(summary.sampled_out, " sampled out");
  add(summary.probes, " X-Retrace-Probe");
  add(summary.excluded, " excluded by path");
  return text.empty() ? text : " (kept out of the trace: " + text + ")";
}

// --out DIR/ (a trailing slash) or an existing directory: numbered segments there
// (format/segments.hpp). The rotation and retention flags need one.
record::SegmentOptions segment_options(const RecordArgs& args) {
  record::SegmentOptions segments;
  std::error_code ec;
  segments.segmented = (!args.out.empty() && args.out.back() == '/') ||
                       std::filesystem::is_directory(args.out, ec);
  segments.rotate_every = args.rotate_every;
  segments.rotate_size = args.rotate_size;
  segments.max_disk = args.max_disk;
  segments.keep_for = args.keep_for;
  const char* needs = args.rotate_every.count() > 0 ? "--rotate-every"
                      : args.rotate_size > 0         ? "--rotate-size"
                      : args.max_disk > 0            ? "--max-disk"
                      : args.keep_for.count() > 0    ? "--keep-for"
                                                     : nullptr;
  if (needs && !segments.segmented)
    throw std::invalid_argument(std::string(needs) + " writes numbered segments into a directory: give "
                                "--out a directory, ending in '/' (e.g. --out " + args.out + "/)");
  if (args.rotate_size > 0 && args.rotate_size < record::kMinRotateSize)
    throw std::invalid_argument("--rotate-size " + std::to_string(args.rotate_size) +
                                ": below one frame of a recording (at least " +
                                std::to_string(record::kMinRotateSize) + " bytes, e.g. 1MiB or 64MiB)");
  if (args.max_disk > 0 && args.rotate_size > 0 && args.max_disk < 2 * args.rotate_size)
    throw std::invalid_argument("--max-disk " + std::to_string(args.max_disk) +
                                ": holds fewer than two segments of --rotate-size " +
                                std::to_string(args.rotate_size) +
                                " (the open one and one closed); raise it or lower --rotate-size");
  return segments;
}

int run_record(const RecordArgs& args) {
  record::RecordOptions options;
  options.segments = segment_options(args);
  // A segment directory found is continued (a restart), never replaced: no --force for it.
  if (!options.segments.segmented) check_output_file(args.out, {}, args.force, "--out");
  options.upstream = net::parse_url(args.upstream);
  options.out = args.out;
  options.listen = net::parse_listen(args.listen);
  options.session_header = args.session_header;
  options.redact_headers = args.redact_headers;
  options.keep_secrets = args.keep_secrets;
  options.include_paths = args.include_paths;
  options.exclude_paths = args.exclude_paths;
  options.max_body = args.max_body;
  options.max_response_bytes = net::check_max_response_bytes(args.max_response_bytes);
  options.writer.flush_ms = args.flush_interval.count();
  options.writer.flush_every = args.flush_every;
  options.writer.derive_tokens = args.derive_tokens;
  options.tls.ca_file = args.ca_file;
  options.tls.insecure = args.insecure;
  options.upstream_timeout = args.upstream_timeout;
  options.duration = args.duration;
  options.max_exchanges = args.max_exchanges;
  options.drain_timeout = args.drain_timeout;
  options.threads = args.threads;
  options.fetch_server_info = !args.no_server_info;
  options.live_status = ::isatty(STDERR_FILENO) != 0;
  options.scrape.enabled = !args.no_scrape && (args.scrape_interval.count() > 0 || !args.scrape_url.empty());
  if (args.scrape_interval.count() > 0) options.scrape.interval = args.scrape_interval;
  options.scrape.url = args.scrape_url;
  options.sample = args.sample;
  options.seed = args.seed;
  if (!args.admin_listen.empty()) options.admin_listen = net::parse_listen(args.admin_listen);
  options.admin_listen_any = args.admin_listen_any;
  options.on_admin_listening = [](const std::string& url) {
    std::cout << "admin on " << url << std::endl;
  };

  if (args.keep_secrets) warn_keep_secrets("record", args.out);
  if (args.insecure && options.upstream.tls())
    std::cerr << "retrace record: warning: --insecure: the upstream's certificate is not checked\n";

  auto summary = record::run_recorder(
      options,
      [](const std::string& url) {
        std::cout << "listening on " << url << std::endl;
      },
      std::cerr, Clock::system());

  std::uint64_t errors = 0;
  std::string by_kind;
  for (std::size_t kind = 1; kind < summary.errors_by_kind.size(); ++kind) {
    if (summary.errors_by_kind[kind] == 0) continue;
    errors += summary.errors_by_kind[kind];
    by_kind += (by_kind.empty() ? "" : ", ") + std::to_string(summary.errors_by_kind[kind]) + " " +
               std::string(to_string(static_cast<ErrorKind>(kind)));
  }
  auto rejected = summary.errors_by_kind[static_cast<std::size_t>(ErrorKind::rejected)];
  std::cerr << "retrace record: " << (summary.stop_reason.empty() ? "stopped" : summary.stop_reason)
            << "; recorded " << summary.exchanges << " exchange(s) of " << summary.forwarded
            << " forwarded"
            << (rejected ? " and " + std::to_string(rejected) + " rejected by record" : std::string())
            << kept_out(summary)
            << ", " << summary.tokens << " tokens, " << errors << " error(s)"
            << (by_kind.empty() ? "" : " (" + by_kind + ")") << " to " << args.out << " ("
            << summary.trace_bytes << " bytes";
  if (summary.segmented)
    std::cerr << "; " << summary.segments_opened << " segment(s) opened, "
              << summary.segments_deleted << " deleted (" << summary.bytes_deleted << " bytes)";
  std::cerr << ")\n";
  if (!summary.index_note.empty()) std::cerr << "retrace record: note: " << summary.index_note << "\n";
  if (summary.queue_full_waits > 0)
    std::cerr << "retrace record: note: the trace thread fell behind and the relay waited for it "
              << summary.queue_full_waits
              << " time(s) (nothing was dropped; a faster disk or more CPU would avoid it)\n";
  if (!summary.write_error.empty()) {
    std::cerr << "retrace record: ERROR: the trace could not be written to the end: "
              << summary.write_error << "\nretrace record: " << summary.lost
              << " exchange(s) were lost; everything before them was flushed and is readable "
                 "(free space or choose another --out)\n";
    return kExitError;
  }
  return kExitOk;
}

}  // namespace

void add_record(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<RecordArgs>();
  auto* command = root.add_subcommand(
      "record", "Record traffic: a reverse proxy between your clients and an inference server");
  command->add_option("--upstream", args->upstream, "The server to forward to (http:// or https://)")
      ->required();
  command->add_option("--out,-o", args->out,
                      "Trace file to write (.rtrace); a directory (DIR/, or one that exists): "
                      "numbered segments DIR/000001.rtrace... (a set found there is continued)")
      ->required();
  add_duration_option(*command, "--rotate-every", args->rotate_every,
                      "With --out DIR/: close the segment and open the next after this long, e.g. 1h",
                      std::chrono::milliseconds(1));
  command->add_option("--rotate-size", args->rotate_size,
                      "With --out DIR/: close the segment once it holds this much, e.g. 256MiB (at least 1MiB)")
      ->transform(CLI::AsSizeValue(false));
  command->add_option("--max-disk", args->max_disk,
                      "With --out DIR/: delete the oldest closed segments to keep the set under this, e.g. 10GiB")
      ->transform(CLI::AsSizeValue(false));
  add_duration_option(*command, "--keep-for", args->keep_for,
                      "With --out DIR/: delete closed segments older than this, e.g. 168h",
                      std::chrono::milliseconds(1));
  add_force_flag(*command, args->force, "Replace an existing --out");
  command->add_option("--listen", args->listen, "HOST:PORT to listen on; port 0 picks a free one")
      ->capture_default_str();
  command->add_option("--session-header", args->session_header,
                      "Request header whose value names a session (e.g. a conversation id)");
  command->add_option("--redact-header", args->redact_headers,
                      "Also redact this header (repeatable; Authorization, cookies, API keys and "
                      "names with auth, token, secret, password or session always are, as are "
                      "secret query parameters and top-level body fields)");
  add_keep_secrets_flag(*command, args->keep_secrets);
  command->add_option("--include-path", args->include_paths,
                      "Record only paths matching this glob (repeatable, e.g. '/v1/*')");
  command->add_option("--exclude-path", args->exclude_paths,
                      "Do not record paths matching this glob (repeatable); still forwarded");
  command->add_option("--max-body", args->max_body, "Largest request body in bytes (413 above; "
                      "such a request is recorded with the error kind rejected)")
      ->capture_default_str();
  command->add_option("--max-response-bytes", args->max_response_bytes,
                      "Cut a recorded response past this many bytes as received (a stream that "
                      "never ends): its client's stream ends there, and the exchange is written "
                      "truncated, up to it")
      ->capture_default_str()
      ->type_name("N");
  add_duration_option(*command, "--flush-interval", args->flush_interval,
                      "Flush the trace at least this often, e.g. 500ms, 2s", std::chrono::milliseconds(1))
      ->default_str(format_duration(args->flush_interval));
  add_renamed_option(*command, "--flush-ms", "--flush-interval with a unit, e.g. --flush-interval 1s");
  command->add_option("--flush-every", args->flush_every, "Flush the trace every N exchanges")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}));
  command->add_flag("--derive-tokens", args->derive_tokens, kDeriveTokensHelp);
  command->add_option("--ca-file", args->ca_file, "PEM CA bundle to verify an https upstream with")
      ->check(CLI::ExistingFile);
  command->add_flag("--insecure", args->insecure, "Do not verify the https upstream's certificate");
  add_duration_option(*command, "--upstream-timeout", args->upstream_timeout,
                      "How long to wait for the upstream to connect or send more bytes (504 / cut)",
                      std::chrono::milliseconds(1))
      ->default_str(format_duration(args->upstream_timeout));
  add_duration_option(*command, "--duration", args->duration,
                      "Stop by itself after this long, e.g. 30s, 10m (default: until stopped)",
                      std::chrono::milliseconds(1));
  command->add_option("--max-exchanges", args->max_exchanges,
                      "Stop by itself after recording this many exchanges");
  add_duration_option(*command, "--drain-timeout", args->drain_timeout,
                      "On SIGINT/SIGTERM or a trace write failure, how long in-flight exchanges may finish")
      ->default_str(format_duration(args->drain_timeout));
  command->add_option("--threads", args->threads, "Proxy threads (0: one per core)")
      ->capture_default_str();
  command->add_flag("--no-server-info", args->no_server_info,
                    "Do not ask the upstream for /v1/models at start");
  command->add_option("--sample", args->sample,
                      "Record this fraction of sessions (0-1): each session (--session-header's "
                      "value, else the first user message) is kept or not as a whole, by a hash; "
                      "the rest is forwarded untouched and counted")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--seed", args->seed,
                      "Seed of --sample's hash: the same seed keeps the same sessions across restarts")
      ->capture_default_str();
  command->add_option("--admin-listen", args->admin_listen,
                      "HOST:PORT for GET /healthz, /readyz and /metrics (Prometheus); off by "
                      "default, loopback only unless --admin-listen-any");
  add_duration_option(*command, "--scrape-interval", args->scrape_interval,
                      "Scrape the upstream's Prometheus /metrics this often into the trace (a baseline at the "
                      "start, one at the stop; `retrace export --metrics` prints them). Off unless this or "
                      "--scrape-url is given; with --scrape-url alone, every 1s",
                      std::chrono::milliseconds(10));
  command->add_option("--scrape-url", args->scrape_url,
                      "The upstream's metrics page's own URL, when it is served on a port of its own "
                      "(default: the upstream's /metrics); turns scraping on")
      ->type_name("URL");
  command->add_flag("--no-scrape", args->no_scrape, "Do not scrape the upstream's /metrics (the default)");
  command->add_flag("--admin-listen-any", args->admin_listen_any,
                    "Allow --admin-listen on a non-loopback address (it has no authentication: "
                    "e.g. for a kubelet's probes on the pod IP)");
  command->footer(
      "Example: retrace record --upstream http://127.0.0.1:8000 --out prod.rtrace --listen :8080\n"
      "Prints 'listening on http://HOST:PORT' once ready; SIGINT/SIGTERM stop it cleanly (exit 0).\n"
      "Ctrl-C again during the drain cuts the exchanges in flight now (recorded as cut); once more\n"
      "quits at once. A trace that cannot be written (a full disk) stops it the same way: in-flight\n"
      "exchanges finish (up to --drain-timeout), then exit 2 with the exact count of exchanges lost.\n"
      "Requests carrying X-Retrace-Probe: 1 (retrace's own preflight probes, metrics scrapes and\n"
      "warm-ups) are forwarded but never recorded: a recording of a replay is its traffic only.\n"
      "Segments: retrace record --upstream URL --out traffic/ --rotate-every 1h --max-disk 20GiB\n"
      "writes traffic/000001.rtrace, 000002.rtrace, ... (each a whole trace, closed between two\n"
      "exchanges); SIGHUP closes the current one and opens the next; every command reads traffic/\n"
      "as one trace. Retention deletes the oldest closed segments, never the open one.");
  registry.add(command, [args] { return run_record(*args); });
}

}  // namespace retrace::cli
