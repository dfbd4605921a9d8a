// Trace files as exchange sources. Kept apart from the engine so that code using only in-memory
// exchanges does not pull in the trace reader.
#include "diff/diff.hpp"

namespace retrace::diff {

namespace {

class TraceFileSource : public ExchangeSource {
 public:
  TraceFileSource(std::filesystem::path path, bool outputs_only)
      : path_(std::move(path)), name_(path_.string()), outputs_only_(outputs_only) {
    open();  // fail now, naming the file, rather than in the middle of the comparison
  }
  const std::string& name() const override { return name_; }
  void rewind() override {
    if (used_) open();
    used_ = true;
  }
  bool next(Exchange& out) override {
    used_ = true;
    while (reader_->next(out))
      if (!set_aside(out.request.method, out.choices.empty())) return true;
    return ended();
  }
  bool next_outputs(ExchangeOutputs& out) override {
    if (!outputs_only_) return ExchangeSource::next_outputs(out);
    used_ = true;
    while (reader_->next(out))
      if (!set_aside(out.method, out.choices.empty())) return true;
    return ended();
  }
  void whole(Exchange& out) override {
    if (!outputs_only_) return ExchangeSource::whole(out);
    reader_->read_last(out);
  }
  std::string recovery_note() const override {
    if (set_aside_ == 0) return note_;
    auto note = std::to_string(set_aside_) +
                " exchange(s) set aside: GET or HEAD requests with no output to compare (a "
                "server's probes, recorded before retrace marked its own with X-Retrace-Probe)";
    return note_.empty() ? note : note_ + "; " + note;
  }

 private:
  void open() {
    reader_ = std::make_unique<TraceReader>(path_);
    set_aside_ = 0;
  }
  bool ended() {
    const Recovery& recovery = reader_->recovery();
    if (!recovery.clean()) note_ = "unreadable parts ignored: " + describe(recovery);
    return false;
  }
  // An exchange that produces no output: a GET or HEAD (no inference request is one) without a
  // choice, such as a replay's preflight GET /v1/models, /version or /props and the 404s some
  // servers answer them with. Nothing in it can diverge; counted, not compared.
  bool set_aside(std::string_view method, bool no_output) {
    if (!no_output || (method != "GET" && method != "HEAD")) return false;
    ++set_aside_;
    return true;
  }

  std::filesystem::path path_;
  std::string name_;
  bool outputs_only_;
  std::unique_ptr<TraceReader> reader_;
  bool used_ = false;
  std::string note_;
  std::size_t set_aside_ = 0;
};

}  // namespace

std::unique_ptr<ExchangeSource> open_trace_source(const std::filesystem::path& path, bool outputs_only) {
  return std::make_unique<TraceFileSource>(path, outputs_only);
}

Result compare_files(const std::filesystem::path& baseline,
                     const std::vector<std::filesystem::path>& candidates, const Options& options) {
  auto baseline_source = open_trace_source(baseline, options.outputs_only);
  std::vector<std::unique_ptr<ExchangeSource>> sources;
  std::vector<ExchangeSource*> pointers;
  for (const auto& path : candidates) {
    sources.push_back(open_trace_source(path, options.outputs_only));
    pointers.push_back(sources.back().get());
  }
  return compare(*baseline_source, pointers, options);
}

}  // namespace retrace::diff
