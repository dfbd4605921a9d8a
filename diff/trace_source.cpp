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
    return reader_->next(out) || ended();
  }
  bool next_outputs(ExchangeOutputs& out) override {
    if (!outputs_only_) return ExchangeSource::next_outputs(out);
    used_ = true;
    return reader_->next(out) || ended();
  }
  void whole(Exchange& out) override {
    if (!outputs_only_) return ExchangeSource::whole(out);
    reader_->read_last(out);
  }
  std::string recovery_note() const override { return note_; }

 private:
  void open() { reader_ = std::make_unique<TraceReader>(path_); }
  bool ended() {
    const Recovery& recovery = reader_->recovery();
    if (!recovery.clean()) note_ = "unreadable parts ignored: " + describe(recovery);
    return false;
  }

  std::filesystem::path path_;
  std::string name_;
  bool outputs_only_;
  std::unique_ptr<TraceReader> reader_;
  bool used_ = false;
  std::string note_;
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
